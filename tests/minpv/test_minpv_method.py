"""Config and trainer plumbing of the MinPV room (spec §10, §11, §15)."""

import json
import os

import jax.numpy as jnp
import numpy as np
import pytest

from experiments.configs.minpv import gaussian_mi
from iclr26_jax.core import config as config_lib
from iclr26_jax.minpv import benchmarks, losses, paths
from iclr26_jax.minpv.config import default_config
from iclr26_jax.minpv.method import MinPVMethod, loss_settings, make_task


def test_default_config_is_faithful():
  c = default_config()
  s = loss_settings(c)
  assert s == losses.LossSettings(objective="joint", penalty=True)   # every reference switch
  assert (c.path.name, c.path.constraint, c.path.num_components) == ("kmm", "spherical", 5)
  assert (c.optim.name, c.optim.learning_rate, c.optim.weight_decay, c.optim.grad_clip) == (
      "adamw", 1e-3, 1e-5, 1.0)
  assert (c.estimate.nodes, c.estimate.grid) == (100, "uniform")


def test_experiment_config_variants_and_overrides():
  c = gaussian_mi.get_config("smoke,data.dim=20,path.name=trig,data.rho=0.5")
  assert c.num_steps == 20 and c.path.name == "trig"
  task = make_task(c)
  assert (task.dim, task.rho) == (20, 0.5)
  c = gaussian_mi.get_config("data.dim=40")
  assert make_task(c).mi == pytest.approx(10.0)                       # d/4 rule
  assert make_task(gaussian_mi.get_config("data.mi=3.0")).mi == pytest.approx(3.0)
  c = gaussian_mi.get_config("fixed")
  s = loss_settings(c)
  assert (s.weights, s.var_for_weights, s.cross_term) == ("time_only", "exact", "exact")
  with pytest.raises(config_lib.ConfigError, match="variant"):
    gaussian_mi.get_config("nosuchvariant")


def test_config_errors_name_the_key():
  with pytest.raises(config_lib.ConfigError, match="loss.objective"):
    loss_settings(gaussian_mi.get_config("loss.objective=implicit"))
  # A frozen KMM with the implicit objective is a fixed schedule: allowed.
  s = loss_settings(gaussian_mi.get_config("loss.objective=implicit,path.training=frozen"))
  assert not s.penalty
  with pytest.raises(config_lib.ConfigError, match="data"):
    make_task(gaussian_mi.get_config("data.dim=7"))
  with pytest.raises(config_lib.ConfigError, match="path.name"):
    MinPVMethod(gaussian_mi.get_config("smoke,path.name=spline"))
  with pytest.raises(config_lib.ConfigError, match="loss"):
    loss_settings(gaussian_mi.get_config("loss.weights=sometimes"))


def test_batches_depend_on_the_step_only_and_have_the_task_law():
  m = MinPVMethod(gaussian_mi.get_config("smoke,batch_size=4096"))
  a, b = m.get_batch(3), m.get_batch(3)
  np.testing.assert_array_equal(a["x1"], b["x1"])
  assert not np.array_equal(a["x1"], m.get_batch(4)["x1"])
  cov = np.cov(a["x1"].T.astype(np.float64))
  np.testing.assert_allclose(cov[0, 1], m.task.rho, atol=0.06)        # s.e. ≈ 0.01
  np.testing.assert_allclose(np.cov(a["x0"].T)[0, 1], 0.0, atol=0.06)
  np.testing.assert_allclose(m.log_r_eval,
                             benchmarks.log_ratio(jnp.asarray(m.x_eval), m.task), rtol=1e-6)


@pytest.mark.slow
def test_smoke_run_logs_checkpoints_and_resumes(tmp_path):
  from iclr26_jax.core import trainer
  cfg = gaussian_mi.get_config("smoke,progress_bar=False")
  res = trainer.train(MinPVMethod(cfg), cfg, str(tmp_path))
  for key in ("eval/mi_estimate", "eval/mi_true", "eval/log_ratio_rmse", "eval/quad_gap"):
    assert np.isfinite(res.eval_metrics[key]), key
  assert res.eval_metrics["eval/mi_true"] == pytest.approx(2.0)
  for key in ("tsm/loss", "path/penalty", "path/alpha_at_0.5", "train/grad_norm"):
    assert np.isfinite(res.metrics[key]), key
  # φ is trained: α(0.5) moved from its initial value.
  alpha0 = float(paths.kmm(paths.kmm_init(5), jnp.array([0.5])).alpha[0])
  assert res.metrics["path/alpha_at_0.5"] != pytest.approx(alpha0, abs=1e-7)
  assert os.path.isdir(tmp_path / "checkpoints" / "20")
  with open(tmp_path / "config.json") as f:
    assert json.load(f)["loss"]["weights"] == "per_sample"
  again = trainer.train(MinPVMethod(cfg), cfg, str(tmp_path))
  assert again.resumed_from == 20


@pytest.mark.slow
def test_presolve_freeze_fits_the_geodesic_and_bridge_update_runs():
  import jax
  from iclr26_jax.minpv import analysis
  # presolve_freeze: init_state solves the path-only problem (m = E‖x1‖² = tr Σ = d) and the
  # optimiser leaves φ alone afterwards.
  cfg = gaussian_mi.get_config("smoke,path.training=presolve_freeze,path.presolve_steps=1000")
  m = MinPVMethod(cfg)
  state = jax.jit(m.init_state)(jax.random.PRNGKey(0))
  probes = jnp.asarray([0.1, 0.25, 0.5, 0.75, 0.9])
  geo = analysis.geodesic(dim=10, m=m.second_moment)
  alpha = paths.kmm(state.params["path"], probes).alpha
  np.testing.assert_allclose(alpha, geo.alpha_at(np.asarray(probes)), atol=0.04)  # as in T1.1
  batch = jax.tree.map(jnp.asarray, m.get_batch(0))
  new, metrics = jax.jit(m.update)(state, batch)
  for a, b in zip(jax.tree.leaves(new.params["path"]), jax.tree.leaves(state.params["path"])):
    np.testing.assert_array_equal(a, b)
  assert float(metrics["path/penalty"]) == 0.0
  # The dequantified bridge with a trainable KMM and the joint objective: one finite step that
  # moves φ.
  cfg = gaussian_mi.get_config("smoke,interpolant=bridge,loss.cross_term=exact")
  m = MinPVMethod(cfg)
  state = jax.jit(m.init_state)(jax.random.PRNGKey(0))
  new, metrics = jax.jit(m.update)(state, jax.tree.map(jnp.asarray, m.get_batch(0)))
  assert all(np.isfinite(float(v)) for v in metrics.values())
  moved = [float(jnp.max(jnp.abs(a - b))) for a, b in
           zip(jax.tree.leaves(new.params["path"]), jax.tree.leaves(state.params["path"]))]
  assert max(moved) > 0
