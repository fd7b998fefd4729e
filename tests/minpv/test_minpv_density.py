"""Density-estimation data and NLL bookkeeping of MinPV: the likelihood and the density tasks."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from experiments.configs.minpv import density_2d, digits
from iclr26_jax.core import config as config_lib
from iclr26_jax.minpv import data
from iclr26_jax.minpv.method import MinPVMethod


@pytest.mark.parametrize("name", data.TOYS)
def test_toy_samplers_have_the_analytic_moments(name):
  n = 200_000
  x = data.sample_toy(name, np.random.default_rng(0), n)
  mean, cov = data.toy_moments(name)
  # s.e. of a mean ≤ √(var/n) ≈ 0.005 (checkerboard var 16/3); of a (co)variance ≈ √(2/n)·var.
  np.testing.assert_allclose(x.mean(0), mean, atol=5 * np.sqrt(np.diag(cov).max() / n))
  np.testing.assert_allclose(np.cov(x.T), cov, atol=5 * np.sqrt(2.0 / n) * np.diag(cov).max())


@pytest.mark.parametrize("name", ["eight_gaussians", "checkerboard"])
def test_toy_log_densities_integrate_to_one_and_cover_the_samples(name):
  g = np.linspace(-5.0, 5.0, 1001)
  xx, yy = np.meshgrid(g, g, indexing="ij")
  p = np.exp(data.toy_log_density(name, np.stack([xx.ravel(), yy.ravel()], 1))).reshape(xx.shape)
  # Riemann sum with h = 0.01: the checkerboard's square edges cost O(h·perimeter/area) ≈ 1e-2.
  np.testing.assert_allclose(p.sum() * (g[1] - g[0]) ** 2, 1.0, atol=2e-2)
  x = data.sample_toy(name, np.random.default_rng(1), 5000)
  assert np.all(np.isfinite(data.toy_log_density(name, x)))


def _zero_time_head(state):
  """log r̂ ≡ 0: the scalar time head outputs exactly 0 (in the parameters and their EMA)."""

  def zero(params):
    net = dict(params["net"])
    net["time_head"] = jax.tree.map(jnp.zeros_like, net["time_head"])
    return {"net": net, "path": params["path"]}

  extras = {"ema": zero(state.extras["ema"])} if "ema" in state.extras else state.extras
  return state.replace(params=zero(state.params), extras=extras)


def test_digits_nll_bookkeeping_with_a_zero_log_ratio():
  # With log r̂ ≡ 0 the model is N(0, I) on the standardised logits, so the reported NLL must be
  # the Gaussian NLL of the preprocessed test images plus the preprocessing Jacobian (here by
  # float64 central differences of an independent re-implementation of v ↦ z) plus 64 log 17 for
  # the [0, 17) pixel scale.
  cfg = digits.get_config("smoke")
  m = MinPVMethod(cfg)
  res = m.evaluate(_zero_time_head(jax.jit(m.init_state)(jax.random.PRNGKey(0))))
  pixels = np.asarray(__import__("sklearn.datasets").datasets.load_digits().data, np.float64)
  perm = np.random.default_rng(0).permutation(pixels.shape[0])
  test = pixels[np.sort(perm[: int(round(0.2 * pixels.shape[0]))])]
  v = (test + np.random.default_rng(int(cfg.data.eval_seed)).random(test.shape)) / 17.0
  lam, mu, sd = 0.05, m.data.std.mean, m.data.std.std
  to_z = lambda vv: (np.log((lam + (1 - 2 * lam) * vv) / (1 - lam - (1 - 2 * lam) * vv)) - mu) / sd
  z = to_z(v)
  h = 1e-6
  log_jac = np.sum(np.log((to_z(v + h) - to_z(v - h)) / (2 * h)), axis=1)
  ref = -np.mean(stats.norm.logpdf(z).sum(1) + log_jac) + 64 * np.log(17.0)
  assert res["eval/nll"] == pytest.approx(ref, abs=2e-3)  # float32 z, ≈ 130 nats
  assert res["eval/nll_baseline"] == pytest.approx(res["eval/nll"], abs=1e-9)
  assert res["eval/bpd"] == pytest.approx(res["eval/nll"] / (64 * np.log(2.0)), rel=1e-12)
  assert m.data.dim == 64 and m.x_eval.shape == (359, 64)


def test_toy_nll_bookkeeping_with_a_zero_log_ratio():
  # log r̂ ≡ 0 on standardised data: the model is N(mean, diag(std²)) in data space.
  cfg = density_2d.get_config("smoke,data.name=eight_gaussians")
  m = MinPVMethod(cfg)
  res = m.evaluate(_zero_time_head(jax.jit(m.init_state)(jax.random.PRNGKey(0))))
  x = data.sample_toy(
    "eight_gaussians", np.random.default_rng(int(cfg.data.eval_seed)), int(cfg.data.eval_size)
  )
  mean, cov = data.toy_moments("eight_gaussians")
  ref = -np.mean(stats.multivariate_normal(mean, np.diag(np.diag(cov))).logpdf(x))
  assert res["eval/nll"] == pytest.approx(ref, abs=1e-4)
  assert res["eval/nll_true"] == pytest.approx(
    -np.mean(data.toy_log_density("eight_gaussians", x)), rel=1e-12
  )


def _write_uci(tmp_path, d=3):
  rng = np.random.default_rng(0)
  arrays = {
    s: rng.standard_normal((n, d)) * [1.0, 2.0, 0.5] + [0.0, 1.0, -1.0]
    for s, n in (("train", 200), ("val", 20), ("test", 30))
  }
  folder = tmp_path / "power"
  folder.mkdir()
  for s, a in arrays.items():
    np.save(folder / f"{s}.npy", a)
  return folder, arrays


def test_uci_loader_layouts_and_errors(tmp_path):
  folder, arrays = _write_uci(tmp_path)
  got = data.load_uci(str(folder))
  for s in ("train", "val", "test"):
    np.testing.assert_array_equal(got[s], arrays[s])
  np.savez(tmp_path / "gas.npz", **arrays)
  np.testing.assert_array_equal(data.load_uci(str(tmp_path / "gas.npz"))["test"], arrays["test"])
  full = np.concatenate([arrays["train"], arrays["val"], arrays["test"]])
  np.savetxt(tmp_path / "hep.csv", full, delimiter=",", header="a,b,c")
  csv = data.load_uci(str(tmp_path / "hep.csv"))
  assert [csv[s].shape[0] for s in ("train", "val", "test")] == [200, 25, 25]
  np.testing.assert_allclose(csv["test"], full[225:], rtol=1e-12)
  with pytest.raises(FileNotFoundError, match="train.npy"):
    data.load_uci(str(tmp_path / "nowhere"))
  os.remove(folder / "test.npy")
  with pytest.raises(FileNotFoundError, match="test.npy"):
    data.load_uci(str(folder))
  with pytest.raises(config_lib.ConfigError, match="data.path"):
    MinPVMethod(density_2d.get_config(f"smoke,data.name=uci,data.path={tmp_path}/nowhere"))


def test_uci_task_nll_bookkeeping(tmp_path):
  folder, arrays = _write_uci(tmp_path)
  m = MinPVMethod(density_2d.get_config(f"smoke,data.name=uci,data.path={folder},data.eval_size=0"))
  assert m.data.dim == 3 and m.x_eval.shape == (30, 3)
  batch = m.get_batch(0)
  assert batch["x1"].shape == (128, 3)
  res = m.evaluate(_zero_time_head(jax.jit(m.init_state)(jax.random.PRNGKey(0))))
  tr = arrays["train"]
  ref = -np.mean(stats.multivariate_normal(tr.mean(0), np.diag(tr.var(0))).logpdf(arrays["test"]))
  assert res["eval/nll"] == pytest.approx(ref, abs=1e-4)


@pytest.mark.slow
def test_short_density_run_beats_the_gaussian_baseline(tmp_path):
  # Eight Gaussians, KMM-MinPV with the ``fixed`` preset's switches, 800 steps (≈ 35 s on a
  # loaded 2-core machine). Measured: NLL 2.89 against the N(0, I)-in-z baseline 3.57 and the
  # exact 2.48; pointwise log-ratio RMSE 0.80 against 1.43 for log r̂ ≡ 0. (The faithful
  # per-sample floored weights overshoot here: NLL 0.65 < exact, RMSE 2.2; score-based
  # likelihoods are not normalised, so the pointwise RMSE is the criterion that cannot be gamed.)
  from iclr26_jax.core import trainer

  cfg = density_2d.get_config(
    "fixed,data.name=eight_gaussians,num_steps=800,batch_size=256,model.width=64,"
    "model.depth=2,model.time_features=32,ema_decay=0.0,log_every=200,checkpoint_every=800,"
    "estimate.nodes=50,data.eval_size=2048,progress_bar=False"
  )
  m = MinPVMethod(cfg)
  res = trainer.train(m, cfg, str(tmp_path))
  ev = res.eval_metrics
  rmse_zero = float(np.sqrt(np.mean(m.data.log_r_true**2)))
  print({k: round(v, 4) for k, v in ev.items() if k.startswith("eval/")}, rmse_zero)
  assert ev["eval/nll"] < ev["eval/nll_baseline"] - 0.4, ev
  assert ev["eval/log_ratio_rmse"] < 0.7 * rmse_zero, (ev, rmse_zero)
  assert abs(ev["eval/quad_gap"]) < 0.1, ev
