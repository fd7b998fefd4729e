"""The reference's (catsbench) estimator choices as options, and the matmul LSE tables.

Hand-worked small cases, no training: the max-shifted matmul contractions equal the broadcast
log-sum-exp; DLightSB-M's per-sample times draw distinct times and its per-row closed forms
equal the per-batch ones row by row; CSBM's averaged KL is the summed KL over D; CSBM's first
trained direction follows ``first_direction``.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.dsb import benchmark as bm
from iclr26_jax.dsb import reference as ref_lib
from iclr26_jax.dsb.solvers import csbm
from iclr26_jax.dsb.solvers import dlightsb_m as dlsm
from iclr26_jax.dsb.solvers.csbm import CSBMConfig

# float32 tolerance of the matmul form against the broadcast form: both sum the same S positive
# terms exp(a + b) after different shifts, so they differ by the rounding of S float32 products
# and of the log, relative ~ S * 2^-24 ~ 3e-6 for S = 50; absolute on values of size up to ~30
# that is ~1e-4. We assert 1e-4 absolute + 1e-5 relative.
ATOL, RTOL = 1e-4, 1e-5


def _cores(key, d, s, k, scale=3.0):
  return scale * jax.random.normal(key, (d, s, k))


@functools.partial(jax.jit, static_argnums=0)
def _contractions(impl, q_bar, cores, rows, w):
  """Every contraction of one implementation in one compiled call (few compiles, fast test)."""
  tables = jnp.stack([bm.log_u_table(q_bar[m], cores, lse_impl=impl) for m in (0, 3, 16)])
  grad = jax.grad(lambda c: bm.log_u_table(q_bar[5], c, lse_impl=impl).sum())(cores)
  return (
    tables,
    bm.log_u_rows(rows, cores, lse_impl=impl),
    bm.log_mix_rows(cores, w, lse_impl=impl),
    grad,
  )


def test_matmul_lse_equals_broadcast():
  ref = ref_lib.make_reference("gaussian", 50, 0.02, 15, 8)
  cores = _cores(jax.random.key(0), 3, 50, 40)
  # Tables at step counts 0, 3, 16 (Q̄_0 = identity: S (S - 1) -inf entries), rows gathered at
  # per-row times, and the component mixture with -inf log-weights.
  x = jax.random.randint(jax.random.key(1), (5, 3), 0, 50)
  rows = ref.log_q_bar[jnp.array([0, 1, 7, 15, 16])[:, None], x]
  w = jax.random.normal(jax.random.key(2), (5, 3, 40)).at[0, 0, :3].set(-jnp.inf)
  got = _contractions("matmul", ref.log_q_bar, cores, rows, w)
  want = _contractions("broadcast", ref.log_q_bar, cores, rows, w)
  for g, v in zip(got[:3], want[:3]):
    np.testing.assert_allclose(g, v, atol=ATOL, rtol=RTOL)
  # Gradients (softmax weights, entries in [0, 1], sums of S of them): the shifts are constants
  # under differentiation, so they agree to the same float32 rounding, 1e-4 relative/absolute.
  np.testing.assert_allclose(got[3], want[3], atol=1e-4, rtol=1e-4)
  # "auto" chooses by K: matmul at K >= MATMUL_MIN_COMPONENTS, broadcast below.
  assert bm._resolve_lse_impl("auto", bm.MATMUL_MIN_COMPONENTS) == "matmul"
  assert bm._resolve_lse_impl("auto", bm.MATMUL_MIN_COMPONENTS - 1) == "broadcast"
  with pytest.raises(ValueError, match="lse_impl"):
    bm.log_u_table(ref.log_q_bar[5], cores, lse_impl="nope")


@pytest.fixture(scope="module")
def tiny():
  return bm.make_benchmark(2, 6, "uniform", 0.05, 3, 2, 3, seed=0, potential="uniform")


@jax.jit
def _per_row_forms(tiny, x, x0, y):
  pot, ref = tiny.potential, tiny.reference
  times = jnp.arange(x.shape[0])  # distinct times 0 .. N
  phi = bm.log_phi_per_row(pot, ref, x, times, lse_impl="matmul")
  trans = bm.transition_marginal_log_probs_per_row(pot, ref, x, times, lse_impl="matmul")
  want_phi = jax.vmap(lambda xb, tb: bm.log_phi(pot, ref, xb[None], tb)[0])(x, times)
  want_trans = jax.vmap(lambda xb, tb: bm.transition_marginal_log_probs(pot, ref, xb[None], tb)[0])(
    x, times
  )
  key, t_rows = jax.random.key(3), jnp.full((x0.shape[0],), 2)
  losses = [
    (
      dlsm.dlightsb_m_loss(pot, ref, x0, y, 2, key, loss)[0],
      dlsm.dlightsb_m_loss(pot, ref, x0, y, t_rows, key, loss)[0],
    )
    for loss in ("joint", "kl")
  ]
  return phi, trans, want_phi, want_trans, losses


def test_per_sample_times_and_per_row_closed_forms(tiny):
  # Per-sample t: B independent draws, several distinct values; per-batch: one scalar.
  t = dlsm.draw_times(jax.random.key(0), tiny.num_steps, 64, "per_sample")
  assert t.shape == (64,) and int(t.min()) >= 0 and int(t.max()) <= tiny.num_steps
  assert len(np.unique(np.asarray(t))) == tiny.num_steps + 1  # 64 draws hit all 4 times
  assert dlsm.draw_times(jax.random.key(0), tiny.num_steps, 64, "per_batch").shape == ()
  # The per-row closed forms equal the table-based ones row by row (distinct times per row).
  x = jax.random.randint(jax.random.key(1), (4, 2), 0, 6)
  x0, y = tiny.sample_pairs(jax.random.key(2), 8)
  phi, trans, want_phi, want_trans, losses = _per_row_forms(tiny, x, x0, y)
  # Row b through the per-batch (table) forms at its own scalar time b equals the per-row forms.
  np.testing.assert_allclose(phi, want_phi, atol=1e-5)
  np.testing.assert_allclose(trans, want_trans, atol=1e-5)
  # The per-row loss at a constant (B,) t equals the scalar-t loss (same draws), both losses.
  for scalar, per_row in losses:
    np.testing.assert_allclose(per_row, scalar, atol=1e-5)
    assert np.isfinite(float(per_row))
  with pytest.raises(ValueError, match="time_sampling"):
    dlsm.DLightSBMConfig(num_potentials=2, train_steps=2, steps_per_chunk=2, time_sampling="x")


def test_csbm_kl_mean_is_sum_over_d():
  ref = ref_lib.make_reference("uniform", 5, 0.05, 3, 2)
  d = 3
  x0 = jax.random.randint(jax.random.key(0), (6, d), 0, 5)
  x1 = jax.random.randint(jax.random.key(1), (6, d), 0, 5)
  t = jnp.array([0, 1, 2, 3, 0, 2])
  logits = jax.random.normal(jax.random.key(2), (6, d, 5))

  @jax.jit
  def losses(logits):
    def fn(x, tt):
      return logits

    key = jax.random.key(3)
    return {
      (kind, r): csbm.bridge_matching_loss(fn, ref, x0, x1, t, key, kind, r)[0]
      for kind in ("kl", "mse")
      for r in ("mean", "sum")
    }

  out = losses(logits)
  np.testing.assert_allclose(out["kl", "mean"], out["kl", "sum"] / d, rtol=1e-6)
  assert float(out["kl", "sum"]) > 0
  # MSE stays summed over d (the reference's) whatever kl_reduction says.
  np.testing.assert_allclose(out["mse", "mean"], out["mse", "sum"])
  assert CSBMConfig().kl_reduction == "mean" and CSBMConfig().first_direction == "forward"
  with pytest.raises(ValueError, match="kl_reduction"):
    CSBMConfig(kl_reduction="max")


def test_csbm_first_direction():
  # Epoch 0 trains `first_direction`, then the directions alternate every epoch (the end-to-end
  # default, forward first, is pinned by test_dsb_csbm's resume and EMA tests).
  steps = jnp.arange(8)
  for first, want in (
    ("forward", [1, 1, 0, 0, 1, 1, 0, 0]),
    ("backward", [0, 0, 1, 1, 0, 0, 1, 1]),
  ):
    cfg = CSBMConfig(train_steps=8, steps_per_chunk=8, epoch_steps=2, first_direction=first)
    np.testing.assert_array_equal(
      np.asarray(csbm.trains_forward(steps, cfg)), np.asarray(want, bool)
    )
