"""Tests for iclr26_jax.dsb.metrics.

Known answers: hand-computed shape / trend values, numpy pair counts, KL of explicit
distributions, and truth-vs-truth zeros. Monte Carlo comparisons state their tolerance inline.
The exact enumeration metrics (E_{p0} KL / TV) and the trajectory KLs are tested in
test_dsb_benchmark.py against its brute-force oracle.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.dsb import benchmark as B
from iclr26_jax.dsb import metrics as M
from iclr26_jax.dsb import reference as R

# The instance of test_dsb_benchmark.py (non-symmetric reference, non-uniform a_k), rebuilt here
# with the same shapes and batch sizes so that compiled functions are shared across the modules.
S, D, K, N, SKIP = 5, 2, 3, 2, 2
BATCH = 60_000


@pytest.fixture(scope="module")
def bench():
  rng = np.random.default_rng(0)
  q = rng.dirichlet(np.full(S, 0.8), size=S)
  log_cores = rng.normal(size=(D, S, K))
  log_p0 = np.log(rng.dirichlet(np.full(S, 2.0), size=D))
  ref = R.reference_from_log_matrix(jnp.log(jnp.asarray(q, jnp.float32)), N, SKIP)
  pot = B.CPPotential(
    log_alpha=jnp.array([0.0, -2.3, 0.9]), log_cp_cores=jnp.asarray(log_cores, jnp.float32)
  )
  return B.build_benchmark(pot, ref, "categorical", source_log_marginals=jnp.asarray(log_p0))


def test_shape_and_trend_known_values():
  y = jnp.array([[0, 0], [1, 1]])
  y_swapped = jnp.array([[0, 1], [1, 0]])
  assert float(M.shape_score(y, y, 2)) == 1.0 and float(M.trend_score(y, y, 2)) == 1.0
  # Same marginals, opposite dependence: pairs (0,1) and (1,0) have TV 1, the diagonal pairs 0.
  assert float(M.shape_score(y, y_swapped, 2)) == 1.0
  assert float(M.trend_score(y, y_swapped, 2, "with_diagonal")) == pytest.approx(0.5)
  assert float(M.trend_score(y, y_swapped, 2, "off_diagonal")) == pytest.approx(0.0)
  assert float(M.trend_score(y, y_swapped, 2)) == pytest.approx(0.0)  # default: catsbench 1.4
  # Disjoint supports.
  assert float(M.shape_score(y, y + 2, 4)) == 0.0 and float(M.trend_score(y, y + 2, 4)) == 0.0
  # One coordinate off by half its mass: TV 0.5 on d = 1 only -> shape 0.75.
  y_half = jnp.array([[0, 0], [1, 0]])
  assert float(M.shape_score(y, y_half, 2)) == pytest.approx(0.75)
  np.testing.assert_allclose(
    np.asarray(M.marginal_entropies(y_half, 2)), [np.log(2.0), 0.0], atol=1e-6
  )


def test_pair_histograms_match_numpy_counts():
  """Includes a batch larger than one chunk (1024 rows) to exercise padding."""
  rng = np.random.default_rng(0)
  y = rng.integers(0, 3, size=(2500, 3))
  got = np.asarray(M.pair_histograms(jnp.asarray(y), 3))
  want = np.zeros((3, 3, 3, 3))
  for i in range(3):
    for j in range(3):
      np.add.at(want[i, j], (y[:, i], y[:, j]), 1.0)
  np.testing.assert_allclose(got, want / len(y), atol=1e-7)


def test_categorical_kl():
  p = jnp.log(jnp.array([0.5, 0.5, 0.0]))
  q = jnp.log(jnp.array([0.25, 0.25, 0.5]))
  assert float(M.categorical_kl(p, q)) == pytest.approx(np.log(2.0), rel=1e-6)
  assert float(M.categorical_kl(p, p)) == 0.0
  assert float(M.categorical_kl(q, p)) == np.inf


def test_conditional_shape_trend(bench):
  pts = jnp.array([[2, 3], [3, 2], [0, 4]])
  ident = lambda k, x: x  # noqa: E731
  shifted = lambda k, x: (x + 1) % S  # noqa: E731
  same = M.conditional_shape_trend(jax.random.key(0), pts, ident, ident, S, num_samples=10)
  assert float(same["cond_shape"]) == 1.0 and float(same["cond_trend"]) == 1.0
  apart = M.conditional_shape_trend(jax.random.key(0), pts, ident, shifted, S, num_samples=10)
  assert float(apart["cond_shape"]) == 0.0 and float(apart["cond_trend"]) == 0.0
  # Truth against truth beats truth against the prior coupling (Monte Carlo: with 20000 samples
  # per point the histogram TV noise on 5 bins is < 0.01 per coordinate, and on 25 pair bins
  # < 0.02, while the prior's rows differ from the plan's by far more on this instance).
  n = BATCH // 3
  truth = M.conditional_shape_trend(
    jax.random.key(1), pts, bench.sample_plan, bench.sample_plan, S, num_samples=n
  )
  prior = M.conditional_shape_trend(
    jax.random.key(1),
    pts,
    bench.sample_plan,
    lambda k, x: M.prior_baseline_sample(bench, k, x),
    S,
    num_samples=n,
  )
  assert float(truth["cond_shape"]) > 0.98 and float(truth["cond_trend"]) > 0.97
  assert float(truth["cond_shape"]) - float(prior["cond_shape"]) > 0.05
  assert float(truth["cond_trend"]) - float(prior["cond_trend"]) > 0.05


def test_sb_perplexity_matches_enumeration(bench):
  states = np.asarray(M.enumerate_states(D, S))
  m = states.shape[0]
  x0_all = jnp.asarray(np.repeat(states, m, axis=0))
  y_all = jnp.asarray(np.tile(states, (m, 1)))
  plan = np.exp(np.asarray(bench.plan_log_prob(x0_all, y_all))).reshape(m, m)
  st = np.asarray(states)
  rows = np.array([0, 7, 19, 24])
  y_hat = st[[3, 3, 11, 0]]
  logp = [
    np.log(plan[i, st[:, d] == y_hat[j, d]].sum()) for j, i in enumerate(rows) for d in range(D)
  ]
  want = np.exp(-np.mean(logp))
  got = M.sb_perplexity(bench, jnp.asarray(st[rows]), jnp.asarray(y_hat))
  assert float(got) == pytest.approx(want, rel=1e-5)


def test_baseline_samplers(bench):
  x0 = jnp.tile(jnp.array([[2, 3]]), (BATCH, 1))
  y = np.asarray(M.prior_baseline_sample(bench, jax.random.key(0), x0))
  kernel = np.exp(np.asarray(bench.reference_log_kernel()))
  # Per-coordinate TV bound as in test_dsb_benchmark._tv_tolerance (delta = 1e-6).
  eps = np.sqrt(np.log(1e6) / (2 * BATCH))
  for d, c in enumerate((2, 3)):
    want = kernel[c]  # row c: a transposed kernel would give column c here (Q non-symmetric)
    tol = 0.5 * np.sqrt(want * (1 - want) / BATCH).sum() + eps
    assert 0.5 * np.abs(np.bincount(y[:, d], minlength=S) / BATCH - want).sum() < tol
  lp = M.prior_baseline_log_prob(bench, jnp.array([[2, 3]]), jnp.array([[4, 0]]))
  assert float(lp[0]) == pytest.approx(np.log(kernel[2, 4] * kernel[3, 0]), rel=1e-5)
  log_cond = jax.nn.log_softmax(
    jnp.asarray(np.random.default_rng(1).normal(size=(D, S, S)), jnp.float32), axis=-1
  )
  y_fw = np.asarray(M.featurewise_eot_sample(log_cond, jax.random.key(2), x0))
  for d, c in enumerate((2, 3)):
    want = np.exp(np.asarray(log_cond[d, c]))
    tol = 0.5 * np.sqrt(want * (1 - want) / BATCH).sum() + eps
    assert 0.5 * np.abs(np.bincount(y_fw[:, d], minlength=S) / BATCH - want).sum() < tol
  lp = M.featurewise_eot_log_prob(log_cond, x0[:2], jnp.array([[0, 1], [2, 4]]))
  np.testing.assert_allclose(
    np.asarray(lp)[1], float(log_cond[0, 2, 2] + log_cond[1, 3, 4]), rtol=1e-6
  )
  y_ind = M.independent_baseline_sample(bench, jax.random.key(3), x0[:BATCH])
  assert y_ind.shape == (BATCH, D)


def test_metrics_input_validation(bench):
  with pytest.raises(ValueError, match="y_hat"):
    M.shape_score(jnp.zeros((3, 2), jnp.int32), jnp.zeros((3, 3), jnp.int32), 4)
  with pytest.raises(ValueError, match="y"):
    M.trend_score(jnp.full((3, 2), 4), jnp.zeros((3, 2), jnp.int32), 4)
  with pytest.raises(ValueError, match="max_pairs"):
    M.exact_conditional_kl_tv(bench, bench.plan_log_prob, max_pairs=100)
  with pytest.raises(ValueError, match="model_sampler output"):
    M.conditional_shape_trend(
      jax.random.key(0),
      jnp.zeros((2, D), jnp.int32),
      lambda k, x: x,
      lambda k, x: x[:1],
      S,
      num_samples=3,
    )


def test_trend_conventions_relate_by_the_diagonal_identity():
  """Identical samples score 1 under both conventions; for any samples
  D^2 (1 - T_with) = D (D - 1) (1 - T_off) + D (1 - shape) (the diagonal pairs are marginals)."""
  rng = np.random.default_rng(3)
  for d, s in ((2, 5), (4, 3)):
    y = jnp.asarray(rng.integers(0, s, (300, d)))
    y_hat = jnp.asarray(
      np.minimum(rng.integers(0, s, (200, d)) + rng.integers(0, 2, (200, d)), s - 1)
    )
    for conv in M.TREND_CONVENTIONS:
      assert float(M.trend_score(y, y, s, conv)) == pytest.approx(1.0)
    t_with = float(M.trend_score(y, y_hat, s, "with_diagonal"))
    t_off = float(M.trend_score(y, y_hat, s, "off_diagonal"))
    shape = float(M.shape_score(y, y_hat, s))
    assert d * d * (1 - t_with) == pytest.approx(
      d * (d - 1) * (1 - t_off) + d * (1 - shape), abs=1e-5
    )
    assert t_off != pytest.approx(t_with, abs=1e-3)
  with pytest.raises(ValueError, match="convention must be one of"):
    M.trend_score(y, y, s, "diag")
  with pytest.raises(ValueError, match="needs D >= 2"):
    M.trend_score(y[:, :1], y[:, :1], s)


def test_reverse_trajectory_kl_rolls_out_a_cp_models_own_mixture_chain(bench):
  """With ``model_potential`` the reverse KL's rollout is the model's Eq. 9 mixture chain: its
  value matches the exact expectation over the enumerated chain's marginals, not the one over
  factorised per-coordinate draws. A sticky reference (uniform, alpha = 0.15, N = 3, s = 1)
  and a two-corner model potential make the two expectations differ by ~0.05."""
  n_steps = 3
  ref = R.make_reference("uniform", S, 0.15, n_steps, 1)
  truth = B.build_benchmark(
    bench.potential, ref, "categorical", source_log_marginals=bench.source_log_marginals
  )
  cores = np.full((D, S, 2), -4.0)
  cores[:, 0, 0] = 0.0
  cores[:, S - 1, 1] = 0.0
  model = B.CPPotential(log_alpha=jnp.zeros(2), log_cp_cores=jnp.asarray(cores, jnp.float32))
  fn = lambda x_t, t: B.transition_marginal_log_probs(model, ref, x_t, t)  # noqa: E731
  states = M.enumerate_states(D, S)
  n_states = states.shape[0]
  x0_state = np.array([0, 4])
  start = np.zeros(n_states)
  start[int(M.state_index(jnp.asarray(x0_state)[None], S)[0])] = 1.0
  rows, cols = jnp.repeat(states, n_states, 0), jnp.tile(states, (n_states, 1))
  c = np.asarray(states)
  exact = {}
  for chain in ("mixture", "factorised"):
    m, per_step = start, []
    for t in range(n_steps + 1):
      lm = np.asarray(fn(states, t), np.float64)  # (n_states, D, S)
      lt = np.asarray(B.transition_marginal_log_probs(truth.potential, ref, states, t), np.float64)
      per_step.append(float(m @ (np.exp(lm) * (lm - lt)).sum(-1).mean(-1)))
      if chain == "mixture":
        p = np.exp(
          np.asarray(B.transition_log_prob(model, ref, rows, cols, t), np.float64)
        ).reshape(n_states, n_states)
      else:
        p = np.exp(sum(lm[:, d][:, c[:, d]] for d in range(D)))
      m = m @ p
    exact[chain] = float(np.mean(per_step)) * D * n_steps
  x0 = jnp.tile(jnp.asarray(x0_state, jnp.int32)[None], (BATCH, 1))
  got = float(M.trajectory_kl_reverse(jax.random.key(7), truth, x0, fn, model_potential=model))
  fact = float(M.trajectory_kl_reverse(jax.random.key(7), truth, x0, fn))
  gap = abs(exact["mixture"] - exact["factorised"])
  assert gap > 0.04, exact
  # Monte Carlo error of 60k paths (per-state KLs ~1): ~0.005, below gap / 4.
  assert got == pytest.approx(exact["mixture"], abs=gap / 4), (got, exact)
  assert fact == pytest.approx(exact["factorised"], abs=gap / 4), (fact, exact)
