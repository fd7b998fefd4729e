"""Known-answer tests for iclr26_jax.dsb.reference.

Oracles are float64 numpy matrix products written here, independent of the library's log-domain
algebra. Identity checks run under float64 (``jax.enable_x64``) with a 1e-10 tolerance (pure
round-off of a handful of S x S products); the reference noise levels quoted in the test are
checked to the digits quoted.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.dsb import reference as R


def _nonsymmetric_q(s, seed=0):
  """Random row-stochastic, clearly non-symmetric one-step matrix (all entries positive)."""
  rng = np.random.default_rng(seed)
  q = rng.dirichlet(np.full(s, 0.7), size=s)
  assert np.abs(q - q.T).max() > 0.1
  return q


def test_uniform_closed_form_equals_repeated_matmul():
  """Eq. 1 against a plain loop of matrix products, and against the log-matmul power."""
  s, alpha = 5, 0.3
  with jax.enable_x64(True):
    q = np.exp(np.asarray(R.uniform_one_step_log_matrix(s, alpha, jnp.float64)))
    np.testing.assert_allclose(q.sum(1), 1.0, atol=1e-14)
    assert np.isclose(q[0, 0], 1 - alpha) and np.isclose(q[0, 1], alpha / (s - 1))
    power = np.eye(s)
    for n in range(8):
      closed = np.asarray(R.uniform_log_matrix_power(s, alpha, n, jnp.float64))
      np.testing.assert_allclose(np.exp(closed), power, rtol=1e-12, atol=1e-15)
      by_log_matmul = np.asarray(R.log_matrix_power(jnp.log(jnp.asarray(q)), n))
      np.testing.assert_allclose(by_log_matmul, closed, rtol=1e-10, atol=1e-12)
      power = power @ q
    stack = np.asarray(R.uniform_cumulative_log_matrices(s, alpha, 2, 3, jnp.float64))
    generic = np.asarray(
      R.cumulative_log_matrices(R.uniform_log_matrix_power(s, alpha, 3, jnp.float64), 2)
    )
    assert stack.shape == (4, s, s)
    np.testing.assert_allclose(stack, generic, rtol=1e-10, atol=1e-12)
    # log Q̄_0 = log I: -inf off the diagonal.
    assert np.all(np.isneginf(stack[0][~np.eye(s, dtype=bool)]))


def test_gaussian_matrix_definition_and_spec_noise_levels():
  """Eq. 2 entries, stochasticity, and the quoted reference noise levels (S = 50, M = 128)."""
  with jax.enable_x64(True):
    s, alpha = 7, 0.4
    q = np.exp(np.asarray(R.gaussian_one_step_log_matrix(s, alpha, jnp.float64)))
    assert np.all(q >= 0)
    np.testing.assert_allclose(q.sum(1), 1.0, atol=1e-14)
    np.testing.assert_allclose(q, q.T, atol=1e-15)
    scale = 4.0 / (alpha * (s - 1)) ** 2
    z = np.exp(-scale * np.arange(-(s - 1), s) ** 2).sum()  # k = -(S-1)..S-1, no k = S term
    np.testing.assert_allclose(q[1, 4], np.exp(-scale * 9) / z, rtol=1e-12)
    np.testing.assert_allclose(q[2, 2], 1 - (q[2].sum() - q[2, 2]), rtol=1e-12)

    cats = np.arange(50)
    for kind, a, stay, unchanged, spread in (
      ("gaussian", 0.02, 0.97, 0.21, 1.96),
      ("gaussian", 0.05, 0.46, 0.041, 9.62),
      ("uniform", 0.005, 0.995, 0.53, None),
      ("uniform", 0.01, 0.99, 0.28, None),
    ):
      log_q = R.one_step_log_matrix(kind, 50, a, jnp.float64)
      row = np.exp(np.asarray(R.log_matrix_power(log_q, 128)))[25]
      assert abs(np.exp(float(log_q[25, 25])) - stay) < 0.005, (kind, a)
      assert abs(row[25] - unchanged) < 0.005, (kind, a)
      if spread is not None:
        mean = (cats * row).sum()
        assert abs(np.sqrt(((cats - mean) ** 2 * row).sum()) - spread) < 0.01
    lam = 1 - 0.005 * 50 / 49
    assert abs(lam**128 - 0.52) < 0.005


def test_cumulative_matrices_nonsymmetric():
  """Q̄_t = (Q^s)^t for a non-symmetric Q: catches transposed products and skip-step errors."""
  s, skip, n = 5, 3, 2  # shapes shared with test_dsb_benchmark's instance (fewer compilations)
  q = _nonsymmetric_q(s)
  with jax.enable_x64(True):
    ref = R.reference_from_log_matrix(jnp.log(jnp.asarray(q)), n, skip)
    assert ref.num_steps == n and ref.num_categories == s and ref.num_base_steps == 9
    bars = np.asarray(ref.log_q_bar)
    assert bars.shape == (n + 2, s, s)
    for t in range(n + 2):
      np.testing.assert_allclose(
        np.exp(bars[t]), np.linalg.matrix_power(q, skip * t), rtol=1e-10, atol=1e-14
      )
    np.testing.assert_allclose(
      np.exp(np.asarray(ref.log_q_step)), np.linalg.matrix_power(q, skip), rtol=1e-10
    )


def test_bridges_nonsymmetric():
  """Eq. 10 and the bridge step against explicit row/column formulas, plus Chapman-Kolmogorov."""
  s, skip, n = 5, 1, 2
  q = _nonsymmetric_q(s, seed=1)
  rng = np.random.default_rng(2)
  x0 = rng.integers(0, s, size=(6, 2))
  y = rng.integers(0, s, size=(6, 2))
  with jax.enable_x64(True):
    ref = R.reference_from_log_matrix(jnp.log(jnp.asarray(q)), n, skip)
    qb = [np.linalg.matrix_power(q, t) for t in range(n + 2)]
    for t in range(n + 2):
      got = np.exp(np.asarray(R.bridge_log_probs(ref, x0, y, t)))
      want = qb[t][x0] * np.moveaxis(qb[n + 1 - t][:, y], 0, -1)
      want /= want.sum(-1, keepdims=True)
      np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-14)
    for t in range(n + 1):
      marg_t = np.exp(np.asarray(R.bridge_log_probs(ref, x0, y, t)))
      marg_next = np.exp(np.asarray(R.bridge_log_probs(ref, x0, y, t + 1)))
      # sum_{x_t} q(x_t | x0, y) q(x_{t+1} | x_t, y) = q(x_{t+1} | x0, y), coordinate-wise.
      composed = np.zeros_like(marg_next)
      for c in range(s):
        x_t = np.full_like(x0, c)
        step = np.exp(np.asarray(R.bridge_step_log_probs(ref, x_t, y, t)))
        composed += marg_t[..., c : c + 1] * step
      np.testing.assert_allclose(composed, marg_next, rtol=1e-10, atol=1e-14)


def test_reference_input_validation():
  with pytest.raises(ValueError, match="alpha"):
    R.uniform_one_step_log_matrix(5, 0.9)
  with pytest.raises(ValueError, match="alpha"):
    R.gaussian_one_step_log_matrix(5, -1.0)
  with pytest.raises(ValueError, match="reference"):
    R.make_reference("cosine", 5, 0.1, 3, 1)
  with pytest.raises(ValueError, match="log_q_one_step"):
    R.reference_from_log_matrix(jnp.zeros((3, 3)), 2)
  ref = R.make_reference("uniform", 5, 0.1, 3, 1)
  with pytest.raises(ValueError, match="x0"):
    R.bridge_log_probs(ref, jnp.full((2, 2), 5), jnp.zeros((2, 2), jnp.int32), 1)
  with pytest.raises(ValueError, match="t must lie"):
    R.bridge_step_log_probs(ref, jnp.zeros((2, 2), jnp.int32), jnp.zeros((2, 2), jnp.int32), 4)
