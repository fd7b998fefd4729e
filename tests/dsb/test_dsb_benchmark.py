"""Known-answer tests for iclr26_jax.dsb.benchmark.

The test instance is enumerable (D = 2, S = 5, K = 3, N = 2, s = 2) with a *non-symmetric*
one-step matrix, non-uniform mixture weights a_k and a full-support categorical source, so that
transposition errors and dropped factors change the answer. Oracles are float64 numpy computations
on the enumerated S^D x S^D problem that never use the CP structure: the plan is
p_0(x_0) K(x_0, y) v(y) / c(x_0) with K the D-fold Kronecker power of numpy's Q^{(N+1)s}.

Which test catches which defect:
* wrong normaliser c(x_0): test_plan_matches_brute_force (exact values) and
  test_plan_rows_normalised_and_source_sums_to_one (rows must sum to 1);
* transposed reference matrix (Q̄ᵀ anywhere in the plan, chain or bridges):
  test_plan_matches_brute_force, test_sinkhorn_reproduces_plan (the kernel is built here from Q,
  so a transposed kernel gives a plan of the wrong form), test_markov_chain_composes_to_plan and
  the bridge comparisons (Q is non-symmetric);
* a missing potential factor (a_k, r or the 1/u normaliser of g): test_plan_matches_brute_force
  for the log-density, test_sampled_plan_rows_match_exact (a_k varies by a factor of ~10 across
  components, and the Monte Carlo tolerance is far below the resulting shifts) for the sampler.

Float64 identities use a 1e-9 tolerance (round-off of a few hundred log-sum-exps). Monte Carlo
tolerances are derived in ``_tv_tolerance``.
"""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax import dsb
from iclr26_jax.dsb import benchmark as B
from iclr26_jax.dsb import metrics as M
from iclr26_jax.dsb import reference as R

S, D, K, N, SKIP = 5, 2, 3, 2, 2


def _instance_arrays(seed=0):
  rng = np.random.default_rng(seed)
  q = rng.dirichlet(np.full(S, 0.8), size=S)  # rows of a non-symmetric one-step matrix
  log_alpha = np.array([0.0, -2.3, 0.9])  # a_k spread by a factor ~25
  log_cores = rng.normal(size=(D, S, K))
  log_p0 = np.log(rng.dirichlet(np.full(S, 2.0), size=D))
  return q, log_alpha, log_cores, log_p0


def _build(dtype):
  q, log_alpha, log_cores, log_p0 = _instance_arrays()
  ref = R.reference_from_log_matrix(jnp.log(jnp.asarray(q, dtype)), N, SKIP)
  pot = B.CPPotential(
    log_alpha=jnp.asarray(log_alpha, dtype), log_cp_cores=jnp.asarray(log_cores, dtype)
  )
  return B.build_benchmark(pot, ref, "categorical", source_log_marginals=jnp.asarray(log_p0, dtype))


class Oracle:
  """Brute-force float64 quantities on the enumerated state space (no CP formulas)."""

  def __init__(self):
    q, log_alpha, log_cores, log_p0 = _instance_arrays()
    self.states = np.array(list(itertools.product(range(S), repeat=D)))  # last coord fastest
    self.q_step = np.linalg.matrix_power(q, SKIP)
    self.q_bar = [np.linalg.matrix_power(self.q_step, t) for t in range(N + 2)]
    st = self.states
    self.kron = lambda m: np.prod([m[st[:, None, d], st[None, :, d]] for d in range(D)], axis=0)
    self.kernel = self.kron(self.q_bar[N + 1])
    r = np.exp(log_cores)
    self.v = (np.exp(log_alpha)[None, :] * np.prod([r[d][st[:, d]] for d in range(D)], axis=0)).sum(
      -1
    )
    self.p0 = np.exp(np.sum([log_p0[d][st[:, d]] for d in range(D)], axis=0))
    joint = self.kernel * self.v[None, :]
    self.c = joint.sum(1)
    self.plan = joint / self.c[:, None]  # pi(y | x0), rows x0
    self.p1 = self.p0 @ self.plan

  def phi(self, t):
    """phi_t(x) = sum_y Q̄_{N+1-t}^{⊗D}(x, y) v(y)."""
    return self.kron(self.q_bar[N + 1 - t]) @ self.v

  def transition(self, t):
    """Enumerated SB transition p(x' | x_t) = K_step(x_t, x') phi_{t+1}(x') / phi_t(x_t)."""
    return self.kron(self.q_step) * self.phi(t + 1)[None, :] / self.phi(t)[:, None]

  def time_marginal(self, t):
    """Law of x_t given x_0 under T* = pi ⊗ bridge: (x0, x_t) matrix."""
    a = self.kron(self.q_bar[t])
    b = self.kron(self.q_bar[N + 1 - t])
    return a * ((self.plan / self.kernel) @ b.T)


@pytest.fixture(scope="module")
def oracle():
  return Oracle()


@pytest.fixture(scope="module")
def bench64():
  with jax.enable_x64(True):  # float64 arrays; each test re-enters the context to use them
    return _build(jnp.float64)


@pytest.fixture(scope="module")
def bench32():
  return _build(jnp.float32)


def _pairs():
  m = S**D
  st = np.asarray(M.enumerate_states(D, S))
  return (jnp.asarray(st), jnp.asarray(np.repeat(st, m, axis=0)), jnp.asarray(np.tile(st, (m, 1))))


# --------------------------------------------------------------------------------------------
# Exact identities (float64).
# --------------------------------------------------------------------------------------------


def test_plan_matches_brute_force(bench64, oracle):
  with jax.enable_x64(True):
    st, x0, y = _pairs()
    np.testing.assert_array_equal(np.asarray(st), oracle.states)
    m = S**D
    got = np.exp(np.asarray(bench64.plan_log_prob(x0, y))).reshape(m, m)
    np.testing.assert_allclose(got, oracle.plan, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(np.asarray(bench64.log_normalizer(st)), np.log(oracle.c), rtol=1e-9)
    np.testing.assert_allclose(np.asarray(bench64.log_potential(st)), np.log(oracle.v), rtol=1e-9)
    np.testing.assert_allclose(
      np.exp(np.asarray(bench64.reference_log_kernel())), oracle.q_bar[N + 1], rtol=1e-10
    )
    # Eq. 8 marginals equal the marginals of the enumerated rows.
    marg = np.exp(np.asarray(bench64.plan_marginal_logits(st)))
    for d in range(D):
      want = np.stack([oracle.plan[:, oracle.states[:, d] == c].sum(1) for c in range(S)], axis=-1)
      np.testing.assert_allclose(marg[:, d], want, rtol=1e-9, atol=1e-14)


def test_plan_rows_normalised_and_source_sums_to_one(bench64):
  with jax.enable_x64(True):
    st, x0, y = _pairs()
    rows = np.exp(np.asarray(bench64.plan_log_prob(x0, y))).reshape(S**D, S**D).sum(1)
    np.testing.assert_allclose(rows, 1.0, atol=1e-10)
    # The categorical source and the quantised gaussian / uniform sources (same shapes, so
    # the compiled source_log_prob is shared).
    for source in ("categorical", "gaussian", "uniform"):
      b = (
        bench64
        if source == "categorical"
        else B.build_benchmark(bench64.potential, bench64.reference, source)
      )
      total = np.exp(np.asarray(b.source_log_prob(st))).sum()
      np.testing.assert_allclose(total, 1.0, atol=1e-12)


def test_sinkhorn_reproduces_plan(bench64, oracle):
  """The benchmark principle: ott-jax Sinkhorn with cost -log q(y|x0) (kernel built here from Q)
  and marginals (p0, p1 of the benchmark's plan) returns the benchmark's joint."""
  from ott.geometry import geometry
  from ott.problems.linear import linear_problem
  from ott.solvers.linear import sinkhorn

  with jax.enable_x64(True):
    st, x0, y = _pairs()
    m = S**D
    p0 = np.exp(np.asarray(bench64.source_log_prob(st)))
    joint = p0[:, None] * np.exp(np.asarray(bench64.plan_log_prob(x0, y))).reshape(m, m)
    a, b = jnp.asarray(p0), jnp.asarray(joint.sum(0))
    geom = geometry.Geometry(cost_matrix=jnp.asarray(-np.log(oracle.kernel)), epsilon=1.0)
    solve = jax.jit(
      lambda g, a, b: sinkhorn.Sinkhorn(threshold=1e-12, max_iterations=20_000)(
        linear_problem.LinearProblem(g, a=a, b=b)
      )
    )  # jit: eager ott dispatch is slow
    out = solve(geom, a, b)
    assert bool(out.converged)
    np.testing.assert_allclose(np.asarray(out.matrix), joint, rtol=1e-8, atol=1e-12)


def test_markov_chain_composes_to_plan(bench64, oracle):
  """Eq. 9 transitions (enumerated) against the joint-form oracle; their product equals the
  one-shot plan; Eq. 11 equals their per-coordinate marginals; the chain's time marginals equal
  the glued bridge (Eq. 10) mixture."""
  with jax.enable_x64(True):
    st, x_t, x_next = _pairs()
    m = S**D
    composed = np.eye(m)
    for t in range(N + 1):
      trans = np.exp(np.asarray(bench64.transition_log_prob(x_t, x_next, t))).reshape(m, m)
      np.testing.assert_allclose(trans.sum(1), 1.0, atol=1e-10)
      np.testing.assert_allclose(trans, oracle.transition(t), rtol=1e-9, atol=1e-14)
      composed = composed @ trans
      np.testing.assert_allclose(composed, oracle.time_marginal(t + 1), rtol=1e-9, atol=1e-14)
      per_coord = np.exp(np.asarray(bench64.transition_logits(st, t)))
      for d in range(D):
        want = np.stack([trans[:, oracle.states[:, d] == c].sum(1) for c in range(S)], -1)
        np.testing.assert_allclose(per_coord[:, d], want, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(composed, oracle.plan, rtol=1e-9, atol=1e-14)
    # Glued bridge: sum_y pi(y|x0) prod_d q(x_t^d | x0^d, y^d) with the library's Eq. 10.
    t = 1
    bridge = np.exp(np.asarray(bench64.bridge_log_probs(x_t, x_next, t)))  # (m*m, D, S)
    bridge = bridge.reshape(m, m, D, S)
    bridge_joint = np.prod(
      [bridge[:, :, d, :][:, :, oracle.states[:, d]] for d in range(D)], axis=0
    )  # (x0, y, x_t)
    mix = np.einsum("iy,iyj->ij", oracle.plan, bridge_joint)
    np.testing.assert_allclose(mix, oracle.time_marginal(t), rtol=1e-9, atol=1e-14)


def test_exact_metrics_zero_for_truth_positive_for_perturbed(bench64, oracle):
  with jax.enable_x64(True):
    truth = M.exact_conditional_kl_tv(bench64, bench64.plan_log_prob)
    assert abs(float(truth.kl)) < 1e-10 and abs(float(truth.tv)) < 1e-10
    perturbed = bench64.replace(
      potential=bench64.potential.replace(log_alpha=bench64.log_alpha + jnp.array([0.0, 1.0, -1.0]))
    )
    got = M.exact_conditional_kl_tv(bench64, perturbed.plan_log_prob)
    st, x0, y = _pairs()
    m = S**D
    p_model = np.exp(np.asarray(perturbed.plan_log_prob(x0, y))).reshape(m, m)
    want_kl = (oracle.p0[:, None] * oracle.plan * np.log(oracle.plan / p_model)).sum()
    want_tv = (oracle.p0 * 0.5 * np.abs(oracle.plan - p_model).sum(1)).sum()
    assert want_kl > 1e-3 and want_tv > 1e-2
    np.testing.assert_allclose(float(got.kl), want_kl, rtol=1e-8)
    np.testing.assert_allclose(float(got.tv), want_tv, rtol=1e-8)
    prior = M.exact_conditional_kl_tv(
      bench64, lambda a, b: M.prior_baseline_log_prob(bench64, a, b)
    )
    assert float(prior.kl) > 1e-2 and float(prior.tv) > 1e-2
    # p1 by enumeration.
    _, log_p1 = M.exact_target_log_probs(bench64)
    np.testing.assert_allclose(np.exp(np.asarray(log_p1)), oracle.p1, rtol=1e-9)


def test_featurewise_eot_is_the_1d_eot_plan(bench64, oracle):
  """Coordinate d's conditional has the EOT structure P^d(y|x) ∝ Q̄(x, y) g(y) (exactly) and
  couples (p_0^d, p_1^d); these two properties determine the 1-D EOT plan. p_1^d is the
  Rao-Blackwellised estimate from n fresh sources, so the pushed marginal matches the exact p_1^d
  within the Monte Carlo bound of ``_tv_tolerance`` (Rao-Blackwellisation only lowers the
  variance, and each source still moves the estimate by at most 1/n in TV)."""
  n = 4000
  with jax.enable_x64(True):
    p1_marg = np.stack(
      [[oracle.p1[oracle.states[:, d] == c].sum() for c in range(S)] for d in range(D)]
    )
    log_cond = np.asarray(
      M.featurewise_eot_log_conditionals(
        bench64, jax.random.key(0), num_marginal_samples=n, threshold=1e-12
      )
    )
    p0_marg = np.exp(np.asarray(bench64.source_log_marginals))
    for d in range(D):
      pushed = p0_marg[d] @ np.exp(log_cond[d])
      assert _tv(pushed, p1_marg[d]) < _tv_tolerance(p1_marg[d], n)
      tilt = log_cond[d] - np.log(oracle.q_bar[N + 1])  # = g(y) - log norm(x)
      centred = tilt - tilt[:, :1]
      np.testing.assert_allclose(centred, centred[:1].repeat(S, 0), atol=1e-9)
    # With the exact p_1^d the pushed marginal is exact too.
    log_cond = np.asarray(
      M.featurewise_eot_log_conditionals(
        bench64, target_log_marginals=jnp.log(jnp.asarray(p1_marg)), threshold=1e-12
      )
    )
    for d in range(D):
      np.testing.assert_allclose(p0_marg[d] @ np.exp(log_cond[d]), p1_marg[d], atol=1e-9)


# --------------------------------------------------------------------------------------------
# Samplers (float32, Monte Carlo).
# --------------------------------------------------------------------------------------------

N_PER_ROW = 20_000
X0_ROWS = np.array([[0, 0], [3, 1], [4, 2]])


def _tv_tolerance(p, n, delta=1e-6):
  """Bound on TV(empirical, p) that fails with probability < delta.

  E TV = 1/2 sum_i E|p̂_i - p_i| <= 1/2 sum_i sqrt(p_i (1 - p_i) / n) (Jensen), and TV changes by
  at most 1/n when one sample changes, so McDiarmid gives
  P(TV > E TV + eps) <= exp(-2 n eps^2), i.e. eps = sqrt(log(1/delta) / (2 n)).
  """
  p = np.asarray(p)
  return 0.5 * np.sqrt(p * (1 - p) / n).sum() + np.sqrt(np.log(1 / delta) / (2 * n))


def _empirical(samples, num_states):
  idx = np.asarray(samples) @ (S ** np.arange(D - 1, -1, -1))
  return np.bincount(idx, minlength=num_states) / len(idx)


def _tv(p, q):
  return 0.5 * np.abs(np.asarray(p) - np.asarray(q)).sum()


def _row_index(x):
  return int(np.asarray(x) @ (S ** np.arange(D - 1, -1, -1)))


def test_sampled_plan_rows_match_exact(bench32, oracle):
  x0 = jnp.asarray(np.repeat(X0_ROWS, N_PER_ROW, axis=0), jnp.int32)
  y = np.asarray(bench32.sample_plan(jax.random.key(1), x0)).reshape(len(X0_ROWS), N_PER_ROW, D)
  for i, row in enumerate(X0_ROWS):
    want = oracle.plan[_row_index(row)]
    assert _tv(_empirical(y[i], S**D), want) < _tv_tolerance(want, N_PER_ROW), row


@pytest.mark.parametrize("method", ["markov", "bridge"])
def test_sampled_trajectories_match_exact(bench32, oracle, method):
  x0 = jnp.asarray(np.repeat(X0_ROWS, N_PER_ROW, axis=0), jnp.int32)
  key = jax.random.key(2)
  paths = np.asarray(bench32.sample_trajectory(key, x0, method=method))
  assert paths.shape == (N + 2, len(X0_ROWS) * N_PER_ROW, D)
  np.testing.assert_array_equal(paths[0], np.asarray(x0))
  if method == "bridge":  # bridge paths are pinned at the plan sample drawn with the first key
    y = bench32.sample_plan(jax.random.split(key)[0], x0)
    np.testing.assert_array_equal(paths[-1], np.asarray(y))
  paths = paths.reshape(N + 2, len(X0_ROWS), N_PER_ROW, D)
  for t in (1, N + 1):
    for i, row in enumerate(X0_ROWS):
      want = oracle.time_marginal(t)[_row_index(row)]
      got = _empirical(paths[t, i], S**D)
      assert _tv(got, want) < _tv_tolerance(want, N_PER_ROW), (method, t, row)


def test_sample_target_matches_second_marginal(bench32, oracle):
  n = len(X0_ROWS) * N_PER_ROW  # same batch size as the rows test: no new compilation
  y = bench32.sample_target(jax.random.key(3), n)
  assert _tv(_empirical(y, S**D), oracle.p1) < _tv_tolerance(oracle.p1, n)
  x0 = bench32.sample_source(jax.random.key(4), n)
  assert _tv(_empirical(x0, S**D), oracle.p0) < _tv_tolerance(oracle.p0, n)


def test_quantised_source_sampler_matches_exact_table(bench32):
  """Quantised N(0, I) draws against the erfc table: catches edge / bucketing mismatches."""
  b = B.build_benchmark(bench32.potential, bench32.reference, "gaussian")
  n = len(X0_ROWS) * N_PER_ROW
  x0 = b.sample_source(jax.random.key(5), n)
  st, _, _ = _pairs()
  want = np.exp(np.asarray(b.source_log_prob(st)))
  assert _tv(_empirical(x0, S**D), want) < _tv_tolerance(want, n)
  # S = 5: edges -7, -7/3, 7/3, 7, so the central category holds Φ(7/3) - Φ(-7/3) per coordinate.
  central = math.erf(7 / 3 / math.sqrt(2))
  np.testing.assert_allclose(want[_row_index([2, 2])], central**2, rtol=1e-5)


def test_chunked_paths_equal_unchunked(bench32):
  """Tiny chunk_elements forces the lax.map path; results must not change."""
  small = bench32.replace(chunk_elements=7)
  st, _, _ = _pairs()
  np.testing.assert_allclose(
    np.asarray(small.transition_logits(st, 1)),
    np.asarray(bench32.transition_logits(st, 1)),
    rtol=1e-6,
    atol=1e-6,
  )
  x0 = jnp.asarray(np.repeat(X0_ROWS, N_PER_ROW, axis=0), jnp.int32)
  key = jax.random.key(6)
  np.testing.assert_array_equal(
    np.asarray(small.sample_plan(key, x0)), np.asarray(bench32.sample_plan(key, x0))
  )


def test_trajectory_kl_against_exact_expectation(bench32, oracle):
  """Trajectory KLs: zero for the truth; for the prior chain as the model, the Monte Carlo value
  matches the exact expectation E_t E_{x_t} mean_d KL * D N, with x_t distributed as the SB chain
  (forward) or the prior chain (reverse) started from p_0."""
  n = len(X0_ROWS) * N_PER_ROW
  x0 = bench32.sample_source(jax.random.key(7), n)
  st, _, _ = _pairs()
  # The truth as a model: Eq. 11 logits of every state, looked up by state index.
  table = jnp.stack([bench32.transition_logits(st, t) for t in range(N + 1)])  # (N+1, M, D, S)
  weights = jnp.asarray(S ** np.arange(D - 1, -1, -1), jnp.int32)
  truth = lambda x_t, t: table[t][x_t @ weights]  # noqa: E731
  fwd0 = M.trajectory_kl_forward(jax.random.key(8), bench32, x0, truth)
  assert abs(float(fwd0)) < 1e-6
  log_q_step = bench32.reference.log_q_step
  prior = lambda x_t, t: log_q_step[x_t]  # noqa: E731
  fwd = float(M.trajectory_kl_forward(jax.random.key(9), bench32, x0, prior))
  rev = float(M.trajectory_kl_reverse(jax.random.key(9), bench32, x0, prior))

  log_prior = np.log(oracle.q_step)[oracle.states]  # (M, D, S) rows of Q_step
  prior_chain = oracle.kron(oracle.q_step)
  law_sb, law_prior = oracle.p0.copy(), oracle.p0.copy()
  kl_f, kl_r, bound = [], [], 0.0
  for t in range(N + 1):
    log_true = np.asarray(bench32.transition_logits(st, t), np.float64)
    p_true, p_prior = np.exp(log_true), np.exp(log_prior)
    per_state_f = (p_true * (log_true - log_prior)).sum(-1).mean(-1)  # mean_d KL, (M,)
    per_state_r = (p_prior * (log_prior - log_true)).sum(-1).mean(-1)
    kl_f.append(law_sb @ per_state_f)
    kl_r.append(law_prior @ per_state_r)
    bound = max(bound, per_state_f.max(), per_state_r.max())
    law_sb, law_prior = law_sb @ oracle.transition(t), law_prior @ prior_chain
  want_f, want_r = np.mean(kl_f) * D * N, np.mean(kl_r) * D * N
  # Each step's batch mean of values in [0, bound] deviates by more than eps with probability
  # <= 2 exp(-2 n eps^2 / bound^2) (Hoeffding); union over the N + 1 steps with delta = 1e-6.
  # Float32 round-off in the logits adds < 1e-4.
  tol = D * N * bound * np.sqrt(np.log(2 * (N + 1) / 1e-6) / (2 * n)) + 1e-4
  assert want_f > 0.05 and want_r > 0.05
  assert abs(fwd - want_f) < tol, (fwd, want_f, tol)
  assert abs(rev - want_r) < tol, (rev, want_r, tol)
  with pytest.raises(ValueError, match="model_transition_logits"):
    M.trajectory_kl_forward(
      jax.random.key(0), bench32, x0[:4], lambda x_t, t: jnp.zeros(x_t.shape + (S + 1,))
    )


def test_mc_conditional_kl_matches_exact(bench32, oracle):
  """Unbiased MC KL: exactly 0 for the truth; for a perturbed potential it matches the exact
  E_{p0} KL within 6 standard errors (the per-sample log-ratio's sd is estimated from the draws;
  a 6-sigma miss has probability < 1e-8 under a normal approximation with n = 60000)."""
  n = len(X0_ROWS) * N_PER_ROW
  x0 = bench32.sample_source(jax.random.key(10), n)
  assert float(M.mc_conditional_kl(jax.random.key(11), bench32, x0, bench32.plan_log_prob)) == 0
  shift = np.array([0.0, 1.0, -1.0])
  perturbed = bench32.replace(
    potential=bench32.potential.replace(
      log_alpha=bench32.log_alpha + jnp.asarray(shift, jnp.float32)
    )
  )
  got = float(M.mc_conditional_kl(jax.random.key(11), bench32, x0, perturbed.plan_log_prob))
  v_pert = np.einsum(
    "k,yk->y",
    np.exp(_instance_arrays()[1] + shift),
    np.prod([np.exp(_instance_arrays()[2])[d][oracle.states[:, d]] for d in range(D)], axis=0),
  )
  plan_pert = oracle.kernel * v_pert[None, :]
  plan_pert /= plan_pert.sum(1, keepdims=True)
  log_ratio = np.log(oracle.plan / plan_pert)
  want = (oracle.p0[:, None] * oracle.plan * log_ratio).sum()
  mean_sq = (oracle.p0[:, None] * oracle.plan * log_ratio**2).sum()
  assert want > 1e-3
  assert abs(got - want) < 6 * np.sqrt((mean_sq - want**2) / n) + 1e-5


# --------------------------------------------------------------------------------------------
# Construction, presets and validation.
# --------------------------------------------------------------------------------------------


def test_presets():
  assert len(B.HD_PRESETS) == 12
  assert "hd_d64_s50_prior_uniform_a0.005" in B.HD_PRESETS
  for kw in B.HD_PRESETS.values():
    assert kw["num_categories"] == 50 and kw["dim"] in (2, 16, 64)
    assert (kw["num_steps"] + 1) * kw["num_skip_steps"] == B.BASE_STEPS
    assert (kw["reference"], kw["alpha"]) in {
      ("gaussian", 0.02),
      ("gaussian", 0.05),
      ("uniform", 0.005),
      ("uniform", 0.01),
    }
  b = dsb.make_preset("hd_d2_s50_prior_uniform_a0.01", seed=3, num_steps=63)
  assert b.num_steps == 63 and b.num_skip_steps == 2 and b.reference.num_base_steps == 128
  assert b.log_cp_cores.shape == (2, 50, 5) and b.dim == 2
  # Re-gridding keeps the static problem: the whole kernel is Q^128 either way.
  b15 = dsb.make_preset("hd_d2_s50_prior_uniform_a0.01", seed=3)
  np.testing.assert_allclose(
    np.asarray(b.reference_log_kernel()), np.asarray(b15.reference_log_kernel()), rtol=1e-5
  )
  np.testing.assert_array_equal(np.asarray(b.log_cp_cores), np.asarray(b15.log_cp_cores))
  with pytest.raises(ValueError, match="num_steps"):
    dsb.make_preset("hd_d2_s50_prior_uniform_a0.01", num_steps=14)
  with pytest.raises(ValueError, match="source_samples"):
    dsb.make_preset("image_d3072_s256_prior_gaussian_a0.01")
  with pytest.raises(ValueError, match="unknown preset"):
    dsb.make_preset("hd_d3_s50_prior_uniform_a0.01")
  with pytest.raises(ValueError, match="alpha"):
    dsb.make_preset("hd_d2_s50_prior_uniform_a0.01", alpha=0.5)
  img = B.IMAGE_PRESETS["image_d3072_s256_prior_gaussian_a0.02"]
  assert img["num_potentials"] == 10 and img["bump_sigma"] == 15.0 and img["reverse"]


def test_gaussian_bump_potential_and_seed_vmap():
  """Bump form, sphere radius, centre separation; construction vmaps over seeds."""
  keys = jax.random.split(jax.random.key(1), 2)
  batched = jax.vmap(lambda kk: B.gaussian_bump_potential(kk, 3, 50, 4))(keys)
  assert batched.log_cp_cores.shape == (2, 3, 50, 4)
  grid = np.arange(50)
  for cores in np.asarray(batched.log_cp_cores):
    centres = cores.argmax(1)  # (D, K) bump centres in category space
    # log r is a normal log-density of width 2 around the quantised centre.
    want = -0.5 * ((grid[None, :, None] - centres[:, None, :]) / 2.0) ** 2 - np.log(
      2.0 * np.sqrt(2 * np.pi)
    )
    np.testing.assert_allclose(cores, want, rtol=1e-5)
    # Centres lie on the sphere of radius 5, quantised by 49 edges over [-5, 5] (bin width
    # 10/48): at bin midpoints they have norm 5 up to sqrt(D) half-bins, and the redraws
    # separated them by more than 2.5 * 2 = 5.
    mid = -5.0 + (centres - 0.5) * 10 / 48  # (D, K)
    slack = np.sqrt(3) * 5 / 48
    assert np.all(np.abs(np.linalg.norm(mid, axis=0) - 5.0) <= slack)
    dist = np.linalg.norm(mid[:, :, None] - mid[:, None, :], axis=0)
    assert np.all(dist[~np.eye(4, dtype=bool)] > 5.0 - 2 * slack)
  assert not np.array_equal(
    np.asarray(batched.log_cp_cores[0]), np.asarray(batched.log_cp_cores[1])
  )
  np.testing.assert_allclose(np.exp(np.asarray(batched.log_alpha)), 0.25, rtol=1e-6)


def test_benchmark_input_validation(bench32):
  with pytest.raises(ValueError, match="x0"):
    bench32.sample_plan(jax.random.key(0), jnp.zeros((3, D + 1), jnp.int32))
  with pytest.raises(ValueError, match="x0"):
    bench32.plan_log_prob(jnp.full((3, D), S), jnp.zeros((3, D), jnp.int32))
  with pytest.raises(ValueError, match="x0"):
    bench32.source_log_prob(jnp.zeros((3, D)))
  with pytest.raises(ValueError, match="t must lie"):
    bench32.transition_logits(jnp.zeros((3, D), jnp.int32), N + 1)
  with pytest.raises(ValueError, match="method"):
    bench32.sample_trajectory(jax.random.key(0), jnp.zeros((3, D), jnp.int32), "euler")
  with pytest.raises(ValueError, match="n must"):
    bench32.sample_source(jax.random.key(0), 0)
  with pytest.raises(ValueError, match="source"):
    B.make_benchmark(2, 5, source="laplace")
  with pytest.raises(ValueError, match="source_log_marginals"):
    B.build_benchmark(
      bench32.potential, bench32.reference, "categorical", source_log_marginals=jnp.zeros((D, S))
    )


def test_centres_are_rejected_one_at_a_time():
  """Per-centre rejection (catsbench): each centre is farther than 2.5 * 2 = 5 from every
  centre accepted before it, or it is the last of its 100 tries (flag False). Where the rule
  can always be met (D = 16, K = 5; D = 2, K = 3) it is, on every seed; at D = 2, K = 5 about
  40% of instances end fully separated (redrawing all K jointly: ~7%)."""
  keys = jax.random.split(jax.random.key(0), 400)
  for d, k, n in ((16, 5, 100), (2, 3, 100), (2, 5, 400)):
    centres, ok = jax.vmap(lambda key: B.sample_centres(key, k, d))(keys[:n])
    centres, ok = np.asarray(centres, np.float64), np.asarray(ok)
    np.testing.assert_allclose(np.linalg.norm(centres, axis=-1), 5.0, rtol=1e-5)
    dist = np.linalg.norm(centres[:, :, None] - centres[:, None], axis=-1)
    earlier = np.tril(np.ones((k, k), bool), -1)  # [i, j]: j < i
    far = np.where(earlier[None], dist, np.inf).min(-1) > 5.0  # (n, K)
    np.testing.assert_array_equal(far, ok)
    if d == 16 or k == 3:
      assert ok.all()
    else:
      assert 0.3 < ok.all(1).mean() < 0.5, ok.all(1).mean()
  # The bump potential is centred on the quantised centres of the same key.
  centres, _ = B.sample_centres(jax.random.key(3), 5, 2)
  pot = B.gaussian_bump_potential(jax.random.key(3), 2, 50, 5)
  np.testing.assert_array_equal(
    np.asarray(pot.log_cp_cores).argmax(1), np.asarray(B.quantise(centres, 50, 5.0)).T
  )


def test_source_range_is_a_per_instance_setting():
  """The quantiser range of the gaussian source (7: ours and catsbench's HEAD; 3: catsbench
  1.4) sets both the sampler and the exact bin law; draws match the law within multinomial
  error (TV of 40k draws over 50 bins: ~0.02)."""
  assert B.HD_PRESETS["hd_d2_s50_prior_gaussian_a0.02"]["source_range"] == 7.0
  for rng_ in (7.0, 3.0):
    bench = B.make_benchmark(2, 50, source_range=rng_, seed=0)
    assert bench.source_range == rng_
    x = np.asarray(bench.sample_source(jax.random.key(1), 40_000))
    p = np.exp(B.source_bin_log_probs("gaussian", 50, rng_))
    freq = np.bincount(x[:, 0], minlength=50) / x.shape[0]
    assert 0.5 * np.abs(freq - p).sum() < 0.03
    np.testing.assert_allclose(
      np.exp(np.asarray(bench.source_log_marginals[0], np.float64)), p, atol=1e-6
    )
  spread = [np.exp(B.source_bin_log_probs("gaussian", 50, r)) for r in (7.0, 3.0)]
  std = [np.sqrt((w * (np.arange(50) - (w * np.arange(50)).sum()) ** 2).sum()) for w in spread]
  assert 3.0 < std[0] < 4.0 and 7.5 < std[1] < 8.5, std
