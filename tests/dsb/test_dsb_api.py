"""The DSB entry points: ``Benchmark.from_preset``, ``sample_solution`` and ``dsb.evaluate``.

Oracles: the preset table itself (a built instance carries the fields its name encodes), the
closed-form plan (exact log pi*(y | x_0) enumerated over all y on a tiny instance gives the KL of
the uniform map in closed form), and the trivial maps (identity, uniform) that the analytic
solution must beat clearly.
"""

import re
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax import dsb

SIZES = dict(num_test=1024, num_points=8, cond_samples=500)
D2 = "hd_d2_s50_prior_gaussian_a0.02"
TINY = "tiny_d2_s6_uniform"


def _name_of(bench) -> str:
  """The preset name a built HD / image instance encodes (the naming scheme, read back)."""
  ref = bench.reference
  kind = "image" if bench.reverse else "hd"
  return f"{kind}_d{bench.dim}_s{bench.num_categories}_prior_{ref.kind}_a{format(ref.alpha, 'g')}"


def test_preset_names_round_trip():
  hd = [n for n in dsb.PRESETS if n.startswith("hd_")]
  assert len(hd) == 12 and set(hd) == set(dsb.HD_PRESETS)
  for name in hd:
    bench = dsb.Benchmark.from_preset(name)
    assert name in dsb.PRESETS and _name_of(bench) == name
    spec = dsb.PRESETS[name]
    assert (bench.num_steps, bench.num_skip_steps) == (spec["num_steps"], spec["num_skip_steps"])
    assert (bench.num_steps + 1) * bench.num_skip_steps == dsb.BASE_STEPS
  for name in dsb.IMAGE_PRESETS:  # the same scheme (built only with user-supplied samples)
    assert re.fullmatch(r"image_d3072_s256_prior_gaussian_a0\.0[12]", name)
  tiny = dsb.Benchmark.from_preset(TINY)
  assert (tiny.dim, tiny.num_categories) == (2, 6)


def test_deprecated_names_map_with_a_warning():
  assert len(dsb.DEPRECATED_PRESET_NAMES) == 12
  assert dsb.DEPRECATED_PRESET_NAMES["gaussian_d2_a002"] == D2
  assert not set(dsb.DEPRECATED_PRESET_NAMES) & set(dsb.PRESETS)
  with pytest.warns(FutureWarning, match="'gaussian_d2_a002' is deprecated; use 'hd_d2_s50"):
    old = dsb.Benchmark.from_preset("gaussian_d2_a002")
  new = dsb.Benchmark.from_preset(D2)
  for a, b in zip(jax.tree.leaves(old), jax.tree.leaves(new)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    assert dsb.resolve_preset(D2) == D2  # canonical names do not warn
  with pytest.raises(ValueError, match="unknown preset 'hd_d3'.*hd_d2_s50_prior_gaussian_a0.02"):
    dsb.Benchmark.from_preset("hd_d3")


def test_sample_solution_is_the_plan():
  bench = dsb.Benchmark.from_preset(TINY)
  x0 = bench.sample_source(jax.random.key(0), 64)
  assert x0.shape == (64, 2) and x0.dtype == jnp.int32
  np.testing.assert_array_equal(
    bench.sample_solution(jax.random.key(1), x0), bench.sample_plan(jax.random.key(1), x0)
  )


@pytest.fixture(scope="module")
def d2_scores():
  bench = dsb.Benchmark.from_preset(D2)
  s = bench.num_categories
  maps = {
    "truth": bench.sample_solution,
    "identity": lambda k, x0: x0,
    "uniform": lambda k, x0: jax.random.randint(k, x0.shape, 0, s),
  }
  return {n: dsb.evaluate(bench, f, key=jax.random.key(0), **SIZES) for n, f in maps.items()}


def test_solution_scores_clearly_above_identity_and_uniform(d2_scores):
  truth, ident, unif = d2_scores["truth"], d2_scores["identity"], d2_scores["uniform"]
  for r in d2_scores.values():
    assert {"shape", "trend", "cond_shape", "cond_trend", "sb_perplexity"} <= set(r)
  # measured: truth 0.94 (sampling noise of 500 samples per point), identity 0.02, uniform 0.18
  assert truth["cond_shape"] > 0.85
  assert truth["cond_shape"] > max(ident["cond_shape"], unif["cond_shape"]) + 0.5
  assert truth["shape"] > max(ident["shape"], unif["shape"]) + 0.3
  # the truth's perplexity is the ceiling (same samples' law), the trivial maps far above it
  assert abs(truth["sb_perplexity"] - truth["sb_perplexity_truth"]) < 0.05 * truth["sb_perplexity"]
  assert min(ident["sb_perplexity"], unif["sb_perplexity"]) > 10 * truth["sb_perplexity_truth"]


def test_exact_kl_with_a_log_density():
  bench = dsb.Benchmark.from_preset(TINY)
  s, d = bench.num_categories, bench.dim
  uniform = (
    lambda k, x0: jax.random.randint(k, x0.shape, 0, s),
    lambda x0, y: jnp.full(x0.shape[:1], -d * np.log(s)),
  )
  small = dict(num_test=256, num_points=4, cond_samples=128)
  r_u = dsb.evaluate(bench, uniform[0], key=jax.random.key(0), log_prob_fn=uniform[1], **small)
  r_t = dsb.evaluate(
    bench, bench.sample_solution, key=jax.random.key(0), log_prob_fn=bench.plan_log_prob, **small
  )
  assert abs(r_t["exact_kl"]) < 1e-5 and r_t["exact_tv"] < 1e-5
  # closed form: KL(pi(.|x0) || U) = D log S - H(pi(.|x0)), averaged over p_0, by enumeration
  states = _states(s, d)
  lp0 = np.asarray(bench.source_log_prob(states), np.float64)
  kl = 0.0
  for i, x in enumerate(np.asarray(states)):
    lp = np.asarray(bench.plan_log_prob(jnp.broadcast_to(x, states.shape), states), np.float64)
    kl += np.exp(lp0[i]) * (d * np.log(s) + np.sum(np.exp(lp) * lp))
  np.testing.assert_allclose(r_u["exact_kl"], kl, rtol=1e-4)
  assert "mc_kl" in r_u and "exact_kl" not in dsb.evaluate(
    bench, uniform[0], key=jax.random.key(0), **small
  )


def _states(s, d):
  grid = np.stack(np.meshgrid(*[np.arange(s)] * d, indexing="ij"), -1).reshape(-1, d)
  return jnp.asarray(grid, jnp.int32)


def test_evaluate_bad_inputs():
  bench = dsb.Benchmark.from_preset(TINY)
  small = dict(num_test=64, num_points=2, cond_samples=16)
  with pytest.raises(ValueError, match=r"sample_fn must return integer states of shape \(64, 2\)"):
    dsb.evaluate(bench, lambda k, x0: x0[:, :1], key=jax.random.key(0), **small)
  with pytest.raises(ValueError, match="sample_fn must return integer"):
    dsb.evaluate(bench, lambda k, x0: x0 * 0.5, key=jax.random.key(0), **small)
  with pytest.raises(ValueError, match="sample_fn must be a callable"):
    dsb.evaluate(bench, None, key=jax.random.key(0), **small)
  with pytest.raises(ValueError, match="reversed"):
    dsb.evaluate("image_d3072_s256_prior_gaussian_a0.01", lambda k, x: x, key=jax.random.key(0))


def test_nan_log_prob_is_refused_not_dropped():
  """A log_prob_fn that returns NaN used to make mc_kl vanish from the result silently."""
  bench = dsb.Benchmark.from_preset(TINY)
  s = bench.num_categories
  sample = lambda k, x0: jax.random.randint(k, x0.shape, 0, s)
  nan_lp = lambda x0, y: jnp.full(x0.shape[:1], jnp.nan)
  with pytest.raises(ValueError, match="log_prob_fn returned NaN"):
    dsb.evaluate(
      bench,
      sample,
      key=jax.random.key(0),
      log_prob_fn=nan_lp,
      num_test=64,
      num_points=2,
      cond_samples=16,
    )
