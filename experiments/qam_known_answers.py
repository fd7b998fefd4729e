"""Known-answer experiments shared by the tests and the reproduce claims.

Analytic Gaussian tilt: state s ~ U[−1, 1] (1-D), D_a = 2, π_β(a|s) = N(μ(s), s_0² I) with
μ(s) = (0.5s, −0.5s), s_0 = 0.3, and the exact behaviour velocity of the linear interpolant used
frozen as v_β = v_β̄. Critic Q(a) = wᵀa − (k/2)‖a − c‖² (linear when k = 0, quadratic when w = 0),
so π* ∝ π_β·exp(λQ) = N(m*, κ* I) with 1/κ* = 1/s_0² + λk and m* = κ*(μ/s_0² + λ(kc + w)).

v_θ is an affine-in-(x, s) field with one parameter row per grid time t_k:
v_θ(s, x, t_k) = a_k ⊙ x + b_k·s + c_k. Both the continuous tilted velocity and the discrete
adjoint-matching fixed point lie in this family (Gaussian base, affine drift, quadratic reward:
the controlled process is linear-Gaussian and dimensions decouple), so what is measured is the
SDE/adjoint machinery and its discretisation, not a network's approximation error. The rollout,
terminal condition, lean adjoint sweep and loss are the library's (``adjoint.py``).
v_θ is affine rather than a small MLP: the affine family removes network approximation error and
makes a 4-problem training run in seconds.

``tilt_experiment()`` trains the four problems of ``PROBS`` under one vmap and returns
``(stats, base, vel)``: ODE-sample mean/std of v_θ ``(4, len(STATES), D)`` each, the same for the
exact v_β, and velocity rms errors ``(4, len(VEL_KS), 3)`` (v_θ − v*, v* − v_β, v_θ − v_β).
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax

from iclr26_jax.qam import adjoint, flows

S0 = 0.3
KAPPA = S0**2
D = 2
N = 40  # mean and covariance are only accurate enough to assert at N ≥ 20–40 flow steps
STEPS = 1500  # Adam steps (cosine-decayed lr, so the final iterate averages the SGD noise)
BATCH = 256
M = 20000  # ODE samples per evaluation state
STATES = (-0.5, 0.0, 0.5)


def _mu(s):
  return jnp.concatenate([0.5 * s, -0.5 * s], axis=-1)


def v_beta(o, x, t):
  return flows.gaussian_velocity(x, t, _mu(o), KAPPA)


def flat_normal(key, shape):
  return jax.random.normal(key, (int(np.prod(shape)),)).reshape(shape)


def _affine_v(p):
  n = p["a"].shape[0]

  def v(o, x, t):
    k = jnp.clip(jnp.round(t * n).astype(jnp.int32), 0, n - 1)
    return p["a"][k] * x + p["b"][k] * o + p["c"][k]

  return v


def _critic(prob):
  def q(o, a):  # (K = 1, B)
    return (a @ prob["w"] - 0.5 * prob["k"] * jnp.sum(jnp.square(a - prob["c"]), -1))[None]

  return q


def tilted(prob, s):
  """(m* (…, D), κ*) of π* ∝ N(μ(s), s_0² I)·exp(λQ)."""
  kap = 1.0 / (1.0 / KAPPA + prob["lam"] * prob["k"])
  m = kap * (_mu(s) / KAPPA + prob["lam"] * (prob["k"] * prob["c"] + prob["w"]))
  return m, kap


def _rollout_and_adjoint(p, prob, key, batch):
  ks = jax.random.split(key, 3)
  o = jax.random.uniform(ks[0], (batch, 1), minval=-1.0, maxval=1.0)
  x0 = flat_normal(ks[1], (batch, D))
  eps = flat_normal(ks[2], (N - 1, batch, D))
  xs = adjoint.rollout(_affine_v(jax.lax.stop_gradient(p)), v_beta, o, x0, eps, N)
  adj_n = adjoint.terminal_adjoint(_critic(prob), o, xs[-1], prob["lam"])
  adjs = adjoint.lean_adjoint(v_beta, o, xs, adj_n, N)
  return o, xs, adjs


def _am_loss(p, prob, key):
  """Eq. 8 exactly as the agent builds it: one batched forward of v_θ on N·B points."""
  o, xs, adjs = _rollout_and_adjoint(p, prob, key, BATCH)
  return adjoint.grid_adjoint_matching_loss(_affine_v(p), v_beta, o, xs, adjs, N)


def _train(prob):
  p = {name: jnp.zeros((N, D)) for name in ("a", "b", "c")}
  tx = optax.adam(optax.cosine_decay_schedule(1e-2, STEPS))

  def step(carry, key):
    p, st = carry
    g = jax.grad(_am_loss)(p, prob, key)
    upd, st = tx.update(g, st, p)
    return (optax.apply_updates(p, upd), st), None

  (p, _), _ = jax.lax.scan(step, (p, tx.init(p)), jax.random.split(jax.random.PRNGKey(0), STEPS))
  return p


def _ode_stats(v, s):
  o = jnp.full((M, 1), s)
  x = flows.euler_ode(v, o, flat_normal(jax.random.PRNGKey(1), (M, D)), N)  # common x_0 for all
  return jnp.mean(x, 0), jnp.std(x, 0)


def _velocity_rms(p, prob):
  """rms over visited points (s, X_k) of v_θ − v*, v* − v_β and v_θ − v_β at the steps VEL_KS."""
  o, xs, _ = _rollout_and_adjoint(p, prob, jax.random.PRNGKey(9), 2000)
  out = []
  for k in VEL_KS:
    t = jnp.full((o.shape[0],), k / N)
    m, kap = tilted(prob, o)
    v_star = flows.gaussian_velocity(xs[k], t, m, kap)
    v_th, v_b = _affine_v(p)(o, xs[k], t), v_beta(o, xs[k], t)
    rms = lambda d: jnp.sqrt(jnp.mean(jnp.square(d)))
    out.append(jnp.stack([rms(v_th - v_star), rms(v_star - v_b), rms(v_th - v_b)]))
  return jnp.stack(out)


# Problems, trained together under one vmap (one compile): quadratic (λ = 1, k = 10,
# c = (0.4, 0.2)), the same at λ = 0, and a linear critic w = (1, −0.5) at λ = 0.5 and λ = 1.
# numpy (float32), not jnp: importing this module must not start a JAX backend.
PROBS = {
  "lam": np.asarray([1.0, 0.0, 0.5, 1.0], np.float32),
  "k": np.asarray([10.0, 10.0, 0.0, 0.0], np.float32),
  "c": np.asarray([[0.4, 0.2]] * 4, np.float32),
  "w": np.asarray([[0.0, 0.0], [0.0, 0.0], [1.0, -0.5], [1.0, -0.5]], np.float32),
}
QUAD, LAM0, LIN_HALF, LIN_ONE = range(4)
VEL_KS = (N // 4, N // 2, 3 * N // 4)


@jax.jit
def tilt_experiment():
  params = jax.vmap(_train)(PROBS)
  ss = jnp.asarray(STATES)
  stats = jax.vmap(lambda p: jax.vmap(lambda s: _ode_stats(_affine_v(p), s))(ss))(params)
  base = jax.vmap(lambda s: _ode_stats(v_beta, s))(ss)
  vel = jax.vmap(_velocity_rms)(params, PROBS)
  return stats, base, vel
