"""The continuous PDNS sampler: controlled SDE, Euler–Maruyama rollout with the Girsanov
log-ratio, and the proximal weighted bridge-matching loss.

W. Guo, J. Choi, Y. Zhu, M. Tao, Y. Chen, "Proximal Diffusion Neural Sampler", ICLR 2026
(arXiv 2510.03824); reference PyTorch code github.com/AlexandreGUO2001/PDNS (``continuous/``).

Holds the control (``ControlNet``, ``make_control``: dX_t = (b_t + sigma_t u_t) dt + sigma_t dW_t),
the rollout (``em_rollout``, Eq. 3), the loss (``bridge_matching_loss``, Eq. 9), the analytic
``gmm_optimal_control`` (the known-answer oracle) and ``ContinuousSampler``. The algorithm, with
its equations and reference hyperparameters: docs/methods/pdns.md ("The algorithm").
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from iclr26_jax.core import sharding as shd
from iclr26_jax.nn import fourier_time_features, mlp
from iclr26_jax.pdns import metrics
from iclr26_jax.pdns.proximal import StageSampler
from iclr26_jax.pdns.references import OUReference

__all__ = [
  "PARAMS",
  "LOSSES",
  "ContinuousSampler",
  "ControlNet",
  "make_control",
  "Rollout",
  "em_rollout",
  "bridge_matching_loss",
  "gmm_optimal_control",
  "log_weight_stats",
]

PARAMS = ("control", "adjoint")
LOSSES = ("control", "adjoint")


class ControlNet(nn.Module):
  """MLP (x, t) -> (d,) with sinusoidal time features and a zero-initialised output layer.

  Attributes:
    dim: d, output size.
    hidden: width of each hidden layer.
    depth: number of hidden layers.
    num_freqs: sinusoidal time frequencies (features sin/cos(2^j pi t), j < num_freqs).
  """

  dim: int
  hidden: int = 64
  depth: int = 2
  num_freqs: int = 4

  @nn.compact
  def __call__(self, t: jax.Array, x: jax.Array) -> jax.Array:
    """t: scalar or (B,); x: (B, d) -> (B, d)."""
    chex.assert_shape(
      x,
      (None, self.dim),
      exception_type=ValueError,
      custom_message=(f"x must have shape (B, {self.dim}); got {tuple(x.shape)}"),
    )
    h = jnp.concatenate([x, fourier_time_features(t, x.shape[0], self.num_freqs, x.dtype)], -1)
    return mlp(
      h,
      (self.hidden,) * self.depth,
      self.dim,
      activation=nn.silu,
      out_kernel_init=nn.initializers.zeros,
      out_bias_init=nn.initializers.zeros,
    )


def make_control(apply_fn: Callable, reference, param: str = "control") -> Callable:
  """u(params, t, x) from a network apply function.

  Args:
    apply_fn: ``apply_fn(params, t, x) -> (B, d)``.
    reference: an ``OUReference`` or ``BMReference`` (for sigma_t).
    param: "control" (u = net) or "adjoint" (u = sigma_t net).

  Returns:
    ``u(params, t, x)``: t scalar, x (B, d) -> (B, d).
  """
  if param not in PARAMS:
    raise ValueError(f"param must be one of {PARAMS}; got {param!r}")
  if param == "control":
    return apply_fn

  def u(params, t, x):
    sig = jnp.asarray(reference.sigma(t))
    if sig.ndim == 1:  # t (B,): one sigma_t per row of x (B, d)
      sig = sig[:, None]
    return sig * apply_fn(params, t, x)

  return u


class Rollout(NamedTuple):
  """Output of ``em_rollout``.

  Attributes:
    x: (N, d) terminal states X_T.
    log_ratio: (N,) l = log dP^ref/dP^theta along each path (Eq. 3).
    path: (n_steps + 1, N, d) states on the grid when requested, else None.
  """

  x: jax.Array
  log_ratio: jax.Array
  path: Any = None


def em_rollout(
  u_fn: Callable,
  params: Any,
  reference,
  key: jax.Array,
  n: int,
  num_steps: int,
  *,
  return_path: bool = False,
  x0: jax.Array | None = None,
) -> Rollout:
  """Euler–Maruyama rollout with the Girsanov log-ratio accumulated from the same noise.

  X_{k+1} = X_k + (b + sigma u) dt + sigma z_k,  l += -u . z_k - 1/2 ‖u‖² dt,  z_k ~ N(0, dt I),
  on the uniform grid t_k = k / num_steps. Noise is never switched off on the last step (that
  would make l undefined). u and z are projected with ``reference.project`` (identity
  unless the reference is centre-of-mass-free), in the state update and in l alike.

  Args:
    u_fn: ``u(params, t, x)`` with x (N, d) -> (N, d) (e.g. from ``make_control``).
    params: the control's parameters (frozen EMA parameters for a stage buffer).
    reference: the reference process.
    key: PRNG key.
    n: N, number of paths.
    num_steps: EM steps.
    return_path: also return the (num_steps + 1, N, d) grid states.
    x0: optional (N, d) initial states (default: fresh draws from mu).

  Returns:
    ``Rollout(x (N, d), log_ratio (N,), path)``.
  """
  if int(num_steps) < 1:
    raise ValueError(f"num_steps must be >= 1; got {num_steps}")
  d = reference.dim
  k0, kz = jax.random.split(key)
  if x0 is None:
    x0 = reference.sample_source(k0, n)
  else:
    chex.assert_shape(
      x0,
      (n, d),
      exception_type=ValueError,
      custom_message=f"x0 must have shape ({n}, {d}); got {tuple(x0.shape)}",
    )
  dt = 1.0 / num_steps
  keys = jax.random.split(kz, num_steps)

  def step(carry, inp):
    x, ell = carry
    k, key_k = inp
    t = k * dt
    u = reference.project(u_fn(params, t, x))
    sig = reference.sigma(t)
    z = math.sqrt(dt) * reference.noise(key_k, (n, d), x.dtype)
    x_new = x + (reference.drift(t, x) + sig * u) * dt + sig * z
    ell = ell + jnp.sum(-u * z - 0.5 * u**2 * dt, -1)
    return (x_new, ell), (x_new if return_path else None)

  # Paths are independent: under the trainer's ``rows_mesh`` they are split over ``data``.
  carry = shd.shard_rows((x0, jnp.zeros((n,), x0.dtype)))
  (x, ell), xs = jax.lax.scan(step, carry, (jnp.arange(num_steps, dtype=x0.dtype), keys))
  path = jnp.concatenate([x0[None], xs], 0) if return_path else None
  return Rollout(x=x, log_ratio=ell, path=path)


def bridge_matching_loss(
  params: Any,
  u_fn: Callable,
  reference,
  key: jax.Array,
  x1: jax.Array,
  weights: jax.Array,
  *,
  t_max: float = 0.999,
  loss: str = "control",
) -> tuple[jax.Array, dict]:
  """Proximal weighted bridge matching (Eq. 9) on one minibatch.

  For each terminal sample X_T = x1[i]: a fresh X_0' ~ mu, t ~ U[0, t_max],
  X_t ~ P^ref(. | X_0', X_T) and the residual u_t(X_t) - sigma_t s_t(X_t; X_T) (``loss="control"``)
  or u_t / sigma_t - s_t (``loss="adjoint"``), u projected with ``reference.project`` as in the
  rollout; the squared residual is averaged over dimensions,
  halved and weighted by ``weights[i]``; the loss is the batch mean. Under the tempered stage
  target (Eq. 8b) this fits the reciprocal (bridge) projection of the stage optimum, as the
  released code does.

  Args:
    params: control parameters.
    u_fn: ``u(params, t, x)`` with t (B,) and x (B, d) -> (B, d).
    reference: the reference process.
    key: PRNG key.
    x1: (B, d) terminal samples from the frozen stage model.
    weights: (B,) self-normalised (or unit, after resampling) weights.
    t_max: cap on t in (0, 1); the target diverges like 1/(1 - t).
    loss: "control" or "adjoint".

  Returns:
    ``(loss, info)`` with ``loss/wdce`` and ``loss/target_norm``.
  """
  if loss not in LOSSES:
    raise ValueError(f"loss must be one of {LOSSES}; got {loss!r}")
  if not 0.0 < t_max < 1.0:
    raise ValueError(f"t_max must lie in (0, 1); got {t_max}")
  chex.assert_shape(
    x1,
    (None, reference.dim),
    exception_type=ValueError,
    custom_message=f"x1 must have shape (B, {reference.dim}); got {tuple(x1.shape)}",
  )
  b, d = x1.shape
  chex.assert_shape(
    weights,
    (b,),
    exception_type=ValueError,
    custom_message=(f"weights must have shape ({b},); got {tuple(weights.shape)}"),
  )
  k0, kt, kb = jax.random.split(key, 3)
  x0 = reference.sample_source(k0, b, x1.dtype)
  t = jax.random.uniform(kt, (b,), x1.dtype, 0.0, t_max)
  xt = reference.sample_bridge(kb, t, x0, x1)
  score = reference.terminal_score(t, xt, x1)
  sig = reference.sigma(t)[:, None]
  u = reference.project(u_fn(params, t, xt))
  if loss == "control":
    res = u - sig * score
    tnorm = jnp.mean(jnp.sum((sig * score) ** 2, -1))
  else:
    res = u / sig - score
    tnorm = jnp.mean(jnp.sum(score**2, -1))
  per = 0.5 * jnp.mean(res**2, -1)
  val = jnp.mean(jax.lax.stop_gradient(weights) * per)
  return val, {"loss/wdce": val, "loss/target_norm": tnorm}


def gmm_optimal_control(
  reference: OUReference, log_weights: jax.Array, means: jax.Array, covs: jax.Array
) -> Callable:
  """Analytic optimal control for a Gaussian-mixture target under the OU reference.

  For pi~ = Z sum_j w_j N(m_j, S_j), reversibility of the stationary OU process gives
  h_t = Z pi_t / nu with pi_t = sum_j w_j N(a_t m_j, a_t^2 S_j + sigma_bar^2 (1 - a_t^2) I),
  a_t = exp(-1/2 int_t^1 alpha), hence u*_t(x) = sigma_t (grad log pi_t(x) + x / sigma_bar^2).

  Args:
    reference: an ``OUReference``.
    log_weights: (J,) log mixture weights (normalised).
    means: (J, d).
    covs: (J, d, d).

  Returns:
    ``u(params, t, x)`` (params ignored): t scalar or (B,), x (B, d) -> (B, d).
  """
  if not isinstance(reference, OUReference):
    raise ValueError(f"reference must be an OUReference; got {type(reference).__name__}")
  j, d = means.shape
  if d != reference.dim or covs.shape != (j, d, d) or log_weights.shape != (j,):
    raise ValueError(
      f"need log_weights ({j},), means ({j}, {reference.dim}), covs ({j}, {d}, {d});"
      f" got {tuple(log_weights.shape)}, {tuple(means.shape)}, {tuple(covs.shape)}"
    )
  s2 = reference.sigma_bar**2
  eye = jnp.eye(d)

  def log_pi_t(t, x):  # t scalar, x (d,)
    a = reference.terminal_mean_coef(t)
    cov = a**2 * covs + s2 * (1 - a**2) * eye
    diff = x - a * means
    sol = jnp.linalg.solve(cov, diff[..., None])[..., 0]
    _, logdet = jnp.linalg.slogdet(cov)
    comp = -0.5 * jnp.sum(diff * sol, -1) - 0.5 * logdet - 0.5 * d * math.log(2 * math.pi)
    return jax.nn.logsumexp(log_weights + comp)

  grad = jax.vmap(jax.grad(log_pi_t, argnums=1))

  def u(params, t, x):
    del params
    tb = jnp.broadcast_to(jnp.asarray(t, x.dtype), x.shape[:1])
    sig = reference.sigma(tb)[:, None]
    return sig * (grad(tb, x) + x / s2)

  return u


def log_weight_stats(log_w: jax.Array) -> dict:
  """Importance-sampling diagnostics of path weights W = l + r.

  Args:
    log_w: (N,) log weights W.

  Returns:
    dict of scalars: ``eval/log_z`` = logsumexp(W) - log N, ``eval/elbo`` = mean W,
    ``eval/path_kl`` = log_z - elbo, ``eval/ess`` = (sum e^W)^2 / (N sum e^{2W}).
  """
  chex.assert_rank(
    log_w,
    1,
    exception_type=ValueError,
    custom_message=(f"log_w must have shape (N,); got {tuple(log_w.shape)}"),
  )
  return {k: v for k, v in metrics.weight_stats(log_w).items() if k.startswith("eval/")}


class ContinuousSampler(StageSampler):
  """The continuous PDNS sampler: network, control, rollout and loss as ``StageProblem`` hooks.

  ``fit(cfg, key, callback=None) -> ProxResult`` and ``sample(params, key, n) -> (x (n, d),
  W (n,))`` (W = l + r) come from ``proximal.StageSampler``; ``api.fit_sampler`` wraps them.

  Args:
    reference: ``OUReference`` or ``BMReference``.
    log_prob_unnorm: log pi~ = -beta E, (..., d) -> (...,).
    num_steps: Euler–Maruyama steps of every rollout.
    param: "control" or "adjoint".
    loss: "control" or "adjoint" (see ``bridge_matching_loss``).
    t_max: cap on the bridge-matching time.
    hidden, depth: network size (MLP hidden layers, or EGNN width and message-passing layers).
    network: "mlp" (``ControlNet``) or "egnn" (``egnn.EGNNControl``, E(n)-equivariant; needs a
      centre-of-mass-free particle reference, ``reference.n_particles`` / ``spatial_dim``).
  """

  def __init__(
    self,
    reference,
    log_prob_unnorm: Callable,
    *,
    num_steps: int = 100,
    param: str = "control",
    loss: str = "control",
    t_max: float = 0.999,
    hidden: int = 64,
    depth: int = 2,
    network: str = "mlp",
  ):
    if param not in PARAMS:
      raise ValueError(f"param must be one of {PARAMS}; got {param!r}")
    if loss not in LOSSES:
      raise ValueError(f"loss must be one of {LOSSES}; got {loss!r}")
    if int(num_steps) < 1:
      raise ValueError(f"num_steps must be >= 1; got {num_steps}")
    self.reference = reference
    self.log_prob_unnorm = log_prob_unnorm
    self.num_steps = int(num_steps)
    self.loss_kind = loss
    self.t_max = t_max
    if network == "mlp":
      self.net = ControlNet(dim=reference.dim, hidden=hidden, depth=depth)
    elif network == "egnn":
      if not getattr(reference, "com_free", False):
        raise ValueError("network='egnn' needs a particle (centre-of-mass-free) reference")
      from iclr26_jax.pdns.egnn import EGNNControl

      self.net = EGNNControl(
        n_particles=reference.n_particles,
        spatial_dim=reference.spatial_dim,
        hidden=hidden,
        depth=depth,
      )
    else:
      raise ValueError(f"network must be 'mlp' or 'egnn'; got {network!r}")
    self.u = make_control(self.net.apply, reference, param)

  def init_params(self, key: jax.Array):
    """Network parameters with a zero output layer (u = 0, P^theta = P^ref)."""
    d = self.reference.dim
    return self.net.init(key, jnp.zeros(()), jnp.zeros((1, d)))

  def rollout(self, params, key: jax.Array, n: int):
    """(x (n, d), l (n,), r (n,)) from one EM rollout of the controlled SDE."""
    out = em_rollout(self.u, params, self.reference, key, n, self.num_steps)
    return out.x, out.log_ratio, self.reference.reward(self.log_prob_unnorm, out.x)

  def loss(self, params, key: jax.Array, x1: jax.Array, w: jax.Array):
    """Eq. 9 on a minibatch x1 (B, d) with weights w (B,)."""
    return bridge_matching_loss(
      params, self.u, self.reference, key, x1, w, t_max=self.t_max, loss=self.loss_kind
    )
