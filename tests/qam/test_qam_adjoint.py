"""Lean adjoint and adjoint-matching loss against autodiff oracles."""

import functools

import jax
import jax.numpy as jnp
import numpy as np

from iclr26_jax.qam import adjoint
from iclr26_jax.qam.networks import VelocityField

B, S, D = 3, 1, 2
LAM = 0.7


def _mlp_velocity():
  # A non-linear velocity with a non-symmetric Jacobian, so a transposed VJP would be caught.
  net = VelocityField((16, 16), D)
  params = net.init(jax.random.PRNGKey(0), jnp.zeros((1, S)), jnp.zeros((1, D)), jnp.zeros((1,)))
  return lambda o, x, t: net.apply(params, o, x, t)


def _quad_q(o, a):
  # (K=2, B): two quadratic critics; ensemble mean gradient is analytic but we only need autodiff.
  c = jnp.asarray([0.2, -0.3])
  q1 = -0.5 * jnp.sum(jnp.square(a - c), -1)
  q2 = -1.5 * jnp.sum(jnp.square(a - c - 0.1), -1) + o[:, 0]
  return jnp.stack([q1, q2])


def _inputs(n):
  k = jax.random.PRNGKey(1)
  obs = jax.random.uniform(k, (B, S), minval=-1, maxval=1)
  x0 = jax.random.normal(jax.random.fold_in(k, 1), (B * D,)).reshape(B, D)
  eps = jax.random.normal(jax.random.fold_in(k, 2), (n * B * D,)).reshape(n, B, D)
  return obs, 0.3 * x0, 0.3 * eps


def test_matched_grid_adjoint_equals_pathwise_gradient():
  """With the rollout using the recursion's own drift 2v(x, t_k+h) − x/(t_k+h) on every step,
  additive noise makes ∂X_N/∂X_k = Π(I + hJ_j), so ã_k = −λ(∂X_N/∂X_k)ᵀ∇Q exactly (to f32
  rounding, hence rtol 1e-4). Catches sign, transpose and ordering errors of the sweep."""
  n = 10
  h = 1.0 / n
  v = _mlp_velocity()
  obs, x0, eps = _inputs(n)
  sig = adjoint.sigmas(n)

  def tail(x, k0):  # X_k -> X_N on the matched grid (python loop, k0 static)
    for k in range(k0, n):
      ts = k * h + h
      x = x + h * (2 * v(obs, x, jnp.full((B,), ts)) - x / ts) + jnp.sqrt(h) * sig[k] * eps[k]
    return x

  xs = [x0]
  for k in range(n):
    xs.append(tail(xs[-1], k) if k == n - 1 else None)
    if k < n - 1:
      ts = k * h + h
      x = xs[k]
      xs[k + 1] = (
        x + h * (2 * v(obs, x, jnp.full((B,), ts)) - x / ts) + jnp.sqrt(h) * sig[k] * eps[k]
      )
  xs = jnp.stack(xs)
  adj_n = adjoint.terminal_adjoint(_quad_q, obs, xs[-1], LAM)
  adjs = adjoint.lean_adjoint(v, obs, xs, adj_n, n)
  assert adjs.shape == (n, B, D)
  reward = lambda xn: -LAM * jnp.sum(jnp.mean(_quad_q(obs, jnp.clip(xn, -1, 1)), 0))
  for k in (0, 4, n - 1):
    oracle = jax.jit(jax.grad(lambda xk: reward(tail(xk, k))))(xs[k])
    np.testing.assert_allclose(adjs[k], oracle, rtol=1e-4, atol=1e-6)
  # The recursion is not trivially the terminal value: the adjoint changed along the sweep.
  assert float(jnp.max(jnp.abs(adjs[0] - adj_n))) > 1e-2


def test_reference_grid_adjoint_converges_like_h():
  """Reference grid (time shift, last step an ODE step): ã_0 matches the pathwise gradient
  through the reference rollout (v_θ = v_β) only to O(h). Measured errors shrink ≈ 1/N
  (ratios ≈ 2 per doubling); we require every doubling to cut the error by > 1.5 and the
  N = 80 error to be below 0.3× the N = 10 error (1/N predicts 0.125)."""
  errs = []
  for n in (10, 20, 40, 80):
    errs.append(float(_ref_grid_error(n)))
  errs = np.asarray(errs)
  assert np.all(errs[:-1] / errs[1:] > 1.5), errs
  assert errs[-1] < 0.3 * errs[0], errs


@functools.partial(jax.jit, static_argnums=0)
def _ref_grid_error(n):
  v = _mlp_velocity()
  obs, x0, eps = _inputs(n - 1)
  f = lambda x: adjoint.rollout(v, v, obs, x, eps, n)[-1]
  xs = adjoint.rollout(v, v, obs, x0, eps, n)
  adj_n = adjoint.terminal_adjoint(_quad_q, obs, xs[-1], LAM)
  adjs = adjoint.lean_adjoint(v, obs, xs, adj_n, n)
  oracle = jax.grad(lambda x: -LAM * jnp.sum(jnp.mean(_quad_q(obs, jnp.clip(f(x), -1, 1)), 0)))(x0)
  return jnp.max(jnp.abs(adjs[0] - oracle))


def test_terminal_adjoint_zero_outside_box_and_sign():
  obs = jnp.zeros((2, S))
  x_n = jnp.asarray([[1.5, 0.0], [0.0, -2.0]])
  lin = lambda o, a: jnp.stack([a @ jnp.asarray([1.0, 2.0])] * 3)  # Q = wᵀa, K = 3
  adj = adjoint.terminal_adjoint(lin, obs, x_n, 0.5)
  np.testing.assert_allclose(adj, [[0.0, -1.0], [-0.5, 0.0]], atol=1e-7)


def test_am_loss_hand_value_and_lambda_zero():
  """Eq. 8 against a hand computation; with λ = 0 the adjoint is zero, and the loss reduces to
  Σ_k (4/σ_k²)‖v_θ − v_β̄‖² (regression of v_θ onto v_β̄, the BC-flow fixed point)."""
  n = 4
  sig = np.sqrt(2 * (1 - np.arange(n) / n + 1 / n) / (np.arange(n) / n + 1 / n))
  np.testing.assert_allclose(adjoint.sigmas(n), sig, rtol=1e-6)
  rng = np.random.default_rng(0)
  vf, vb, ad = (rng.normal(size=(n, 2, 3)).astype(np.float32) for _ in range(3))
  want = np.mean(
    np.sum(((2 / sig)[:, None, None] * (vf - vb) + sig[:, None, None] * ad) ** 2, axis=(0, 2))
  )
  np.testing.assert_allclose(adjoint.adjoint_matching_loss(vf, vb, ad, n), want, rtol=1e-5)
  # λ = 0: zero terminal adjoint propagates to zero adjoints.
  v = _mlp_velocity()
  obs, x0, eps = _inputs(n - 1)
  xs = adjoint.rollout(v, v, obs, x0, eps, n)
  adj_n = adjoint.terminal_adjoint(_quad_q, obs, xs[-1], 0.0)
  adjs = adjoint.lean_adjoint(v, obs, xs, adj_n, n)
  assert float(jnp.max(jnp.abs(adjs))) == 0.0
  want0 = np.mean(np.sum(((2 / sig)[:, None, None] * (vf - vb)) ** 2, axis=(0, 2)))
  np.testing.assert_allclose(
    adjoint.adjoint_matching_loss(vf, vb, np.zeros_like(ad), n), want0, rtol=1e-5
  )
  assert float(adjoint.adjoint_matching_loss(vb, vb, np.zeros_like(ad), n)) == 0.0
