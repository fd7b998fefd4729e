"""The proximal stage loop of PDNS, shared by the continuous and discrete samplers.

W. Guo, J. Choi, Y. Zhu, M. Tao, Y. Chen, "Proximal Diffusion Neural Sampler", ICLR 2026
(arXiv 2510.03824); reference PyTorch code github.com/AlexandreGUO2001/PDNS.

Stage k minimises F(P) + (1/eta_k) KL(P || P_{theta_{k-1}}), c_k = eta_k / (1 + eta_k). Here:
the stage weights (``stage_log_weights``, Eq. 8a / 8b), their normalisation and resampling
(``normalize_weights``, ``resample_indices``), the trust-region step size of Eq. 10 (``kl_hat``,
``solve_step_size``, ``check_epsilon``), the stage step (``make_stage_fns``, which the trainer
``Method`` also runs) and the fit loop (``run_stages``, ``StageSampler``). The algorithm, with its
equations and reference hyperparameters: docs/methods/pdns.md ("The algorithm").
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Callable, NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from iclr26_jax.core import optim as core_optim
from iclr26_jax.core import sharding as shd
from iclr26_jax.core import trainer as core_trainer
from iclr26_jax.core.train_state import TrainState
from iclr26_jax.pdns import metrics

__all__ = [
  "STAGE_TARGETS",
  "STEP_SIZES",
  "WEIGHTINGS",
  "NORMALIZATIONS",
  "ProxConfig",
  "StageProblem",
  "ProxResult",
  "stage_log_weights",
  "normalize_weights",
  "kl_hat",
  "ess",
  "solve_step_size",
  "check_epsilon",
  "resample_indices",
  "run_stages",
  "StageFns",
  "make_stage_fns",
  "steps_per_stage",
  "total_stages",
  "INFO_KEYS",
  "history_array",
  "StageSampler",
]

STAGE_TARGETS = ("prox", "ideal")
STEP_SIZES = ("fixed", "list", "adaptive")
WEIGHTINGS = ("resample", "weight")
NORMALIZATIONS = ("buffer", "minibatch")

# Flags of ``solve_step_size``.
FEASIBLE, EPS_ABOVE_BRACKET, EPS_BELOW_BRACKET = 0, 1, 2


def _check_vec(x: jax.Array, name: str, n: int | None = None) -> None:
  want = f"({n},)" if n is not None else "(N,)"
  chex.assert_shape(
    x,
    (n,),
    exception_type=ValueError,
    custom_message=f"{name} must have shape {want}; got {tuple(x.shape)}",
  )


def stage_log_weights(ell: jax.Array, r: jax.Array, c, lam_prev, stage_target: str = "prox"):
  """Stage log-weights on samples of the frozen previous model (Eq. 8a / 8b).

  Args:
    ell: (N,) l_{k-1} = log dP^ref/dP_{theta_{k-1}} along each path.
    r: (N,) terminal rewards r(X_T).
    c: c_k in [0, 1] (scalar).
    lam_prev: lambda_{k-1} (scalar).
    stage_target: "prox" (Eq. 8b: c (l + r)) or "ideal" (Eq. 8a: l + (1 - lambda_k) r).

  Returns:
    ``(log_w (N,), lambda_k)`` with lambda_k = lambda_{k-1} (1 - c).
  """
  _check_vec(ell, "ell")
  _check_vec(r, "r", ell.shape[0])
  lam = lam_prev * (1.0 - c)
  if stage_target == "prox":
    return c * (ell + r), lam
  if stage_target == "ideal":
    return ell + (1.0 - lam) * r, lam
  raise ValueError(f"stage_target must be one of {STAGE_TARGETS}; got {stage_target!r}")


def kl_hat(log_w: jax.Array) -> jax.Array:
  """Self-normalised KL estimate -(1/N) sum_i log(N wbar_i) = LSE(log w) - log N - mean(log w).

  Args:
    log_w: (N,) unnormalised log-weights.
  Returns:
    scalar, >= 0.
  """
  _check_vec(log_w, "log_w")
  return jax.nn.logsumexp(log_w) - math.log(log_w.shape[0]) - jnp.mean(log_w)


def ess(log_w: jax.Array) -> jax.Array:
  """Normalised effective sample size (sum w)^2 / (N sum w^2) in (0, 1]; log_w (N,) -> scalar."""
  _check_vec(log_w, "log_w")
  return metrics.ess(log_w)


def normalize_weights(log_w: jax.Array, clamp_max: float = 100.0, filter_max: float = 1e8):
  """Self-normalised weights with mean 1, filtered then clamped (the reference code's convention).

  w = N softmax(log w) over the given set (non-finite log-weights excluded); entries that are not
  finite, exceed ``filter_max`` or are negative are set to 0 ("filtered"); the rest are clamped to
  [0, clamp_max] ("clamped").

  Args:
    log_w: (N,) log-weights (the whole buffer, or one minibatch).
    clamp_max: upper clamp after normalising.
    filter_max: larger normalised weights are dropped.

  Returns:
    ``(w (N,), info)`` with ``weights/frac_filtered``, ``weights/frac_clamped``,
    ``weights/max_wbar`` (largest self-normalised weight before clamping, in [1/N, 1]).
  """
  _check_vec(log_w, "log_w")
  n = log_w.shape[0]
  finite = jnp.isfinite(log_w)
  p = jax.nn.softmax(jnp.where(finite, log_w, -jnp.inf))
  w = n * p
  keep = finite & jnp.isfinite(w) & (w <= filter_max) & (w >= 0)
  w = jnp.where(keep, w, 0.0)
  clamped = w > clamp_max
  w = jnp.clip(w, 0.0, clamp_max)
  info = {
    "weights/frac_filtered": 1.0 - jnp.mean(keep.astype(w.dtype)),
    "weights/frac_clamped": jnp.mean(clamped.astype(w.dtype)),
    "weights/max_wbar": jnp.max(jnp.where(finite, p, 0.0)),
  }
  return w, info


def resample_indices(key: jax.Array, w: jax.Array, n: int) -> jax.Array:
  """n multinomial draws (with replacement) of indices proportional to w (N,) -> (n,) int32.

  Inverse-CDF sampling (binary search of n uniforms in the cumulative weights): O(n log N) time
  and O(n + N) memory, so buffers of 10^5 samples resample cheaply. Zero weights are never drawn.
  """
  _check_vec(w, "w")
  cdf = jnp.cumsum(w.astype(jnp.float32))
  u = jax.random.uniform(key, (n,), jnp.float32) * cdf[-1]
  idx = jnp.searchsorted(cdf, u, side="right")
  return jnp.clip(idx, 0, w.shape[0] - 1).astype(jnp.int32)


def check_epsilon(epsilon: float, n: int) -> None:
  """Rejects a trust-region radius N samples cannot resolve (eps >= log N) or eps <= 0."""
  if not epsilon > 0:
    raise ValueError(f"epsilon must be > 0; got {epsilon}")
  if epsilon >= math.log(n):
    raise ValueError(
      f"epsilon = {epsilon} is >= log N = log({n}) = {math.log(n):.4g}: a buffer of "
      f"N = {n} samples cannot resolve a KL that large; lower epsilon or raise N"
    )


def solve_step_size(
  ell: jax.Array,
  r: jax.Array,
  epsilon,
  lam_prev=1.0,
  *,
  stage_target: str = "prox",
  c_min: float = 0.01,
  c_max: float = 0.99,
  iters: int = 50,
):
  """Adaptive step size: solve KL^(log w_k(c)) = epsilon for c (Eq. 10) by bisection.

  KL^ is convex in c; for Eq. 8b it is 0 at c = 0 and increasing. The bisection assumes it
  increases on [c_min, c_max]; when epsilon lies outside [KL^(c_min), KL^(c_max)] the answer is
  clamped to the nearer end and flagged (never a silent fallback value).

  Args:
    ell: (N,) path log-ratios of the frozen previous model.
    r: (N,) terminal rewards.
    epsilon: trust-region radius (scalar; validate with ``check_epsilon`` at config time).
    lam_prev: lambda_{k-1} (only used by ``stage_target="ideal"``).
    stage_target: "prox" or "ideal".
    c_min, c_max: the bracket, 0 <= c_min < c_max <= 1.
    iters: bisection iterations (bracket shrinks by 2^-iters).

  Returns:
    ``(c, kl, flag)``: scalars; kl = KL^ at c; flag 0 feasible, 1 epsilon above KL^(c_max)
    (c = c_max, e.g. constant weights), 2 epsilon below KL^(c_min) (c = c_min).
  """
  if not 0.0 <= c_min < c_max <= 1.0:
    raise ValueError(f"need 0 <= c_min < c_max <= 1; got c_min={c_min}, c_max={c_max}")

  def kl_of(c):
    return kl_hat(stage_log_weights(ell, r, c, lam_prev, stage_target)[0])

  def body(_, bracket):
    lo, hi = bracket
    mid = 0.5 * (lo + hi)
    up = kl_of(mid) > epsilon
    return jnp.where(up, lo, mid), jnp.where(up, mid, hi)

  dtype = ell.dtype
  lo, hi = jax.lax.fori_loop(0, iters, body, (jnp.asarray(c_min, dtype), jnp.asarray(c_max, dtype)))
  c = 0.5 * (lo + hi)
  kl_lo, kl_hi = kl_of(jnp.asarray(c_min, dtype)), kl_of(jnp.asarray(c_max, dtype))
  above = kl_hi < epsilon
  below = kl_lo > epsilon
  c = jnp.where(above, c_max, jnp.where(below, c_min, c)).astype(dtype)
  flag = jnp.where(above, EPS_ABOVE_BRACKET, jnp.where(below, EPS_BELOW_BRACKET, FEASIBLE))
  return c, kl_of(c), flag.astype(jnp.int32)


@dataclasses.dataclass(frozen=True)
class ProxConfig:
  """Stage-loop hyperparameters. Frozen and hashable (a jit cache key).

  Attributes:
    num_stages: cap on proximal stages before refinement.
    epochs_per_stage: passes over the buffer per stage; steps = epochs * (buffer_size // batch).
    buffer_size: N, samples rolled out from the frozen model per stage.
    batch_size: minibatch size; must divide buffer_size.
    step_size: "fixed" (c_fixed every stage), "list" (c_list[k-1]) or "adaptive" (Eq. 10).
    c_fixed: constant c for "fixed".
    c_list: per-stage c for "list" (length >= num_stages).
    epsilon: trust-region radius for "adaptive"; must be < log(buffer_size).
    c_min, c_max: bisection bracket.
    bisect_iters: bisection iterations.
    stage_target: "prox" (Eq. 8b, default) or "ideal" (Eq. 8a).
    weighting: "resample" (multinomial, unit weights, redrawn every epoch) or "weight".
    normalize: "buffer" (continuous reference) or "minibatch" (discrete reference; "weight" only).
    clamp_max: clamp of normalised weights.
    filter_max: normalised weights above this are dropped.
    lambda_min: switch to eta = infinity refinement once lambda_k < lambda_min.
    refine_stages: refinement stages at c = 1.
    eta_inf: non-proximal baseline: c = 1 from the first stage (num_stages + refine_stages
      stages, all at eta = infinity).
    ema_decay: EMA decay of the parameters within a stage.
    learning_rate, b1, b2, grad_clip: Adam settings (``core.optim``), fresh state every stage;
      in a run config these are ``optim.learning_rate`` / ``b1`` / ``b2`` / ``grad_clip``
      (``pdns.method.prox_config`` builds this dataclass from the config).
  """

  num_stages: int = 10
  epochs_per_stage: int = 10
  buffer_size: int = 2048
  batch_size: int = 256
  step_size: str = "adaptive"
  c_fixed: float = 0.1
  c_list: tuple = ()
  epsilon: float = 1.0
  c_min: float = 0.01
  c_max: float = 0.99
  bisect_iters: int = 50
  stage_target: str = "prox"
  weighting: str = "resample"
  normalize: str = "buffer"
  clamp_max: float = 100.0
  filter_max: float = 1e8
  lambda_min: float = 0.02
  refine_stages: int = 2
  eta_inf: bool = False
  ema_decay: float = 0.99
  learning_rate: float = 1e-3
  b1: float = 0.9
  b2: float = 0.999
  grad_clip: float = 100.0

  def __post_init__(self):
    for name in ("num_stages", "epochs_per_stage", "buffer_size", "batch_size", "bisect_iters"):
      if int(getattr(self, name)) < 1:
        raise ValueError(f"{name} must be >= 1; got {getattr(self, name)}")
    if self.refine_stages < 0:
      raise ValueError(f"refine_stages must be >= 0; got {self.refine_stages}")
    if self.buffer_size % self.batch_size:
      raise ValueError(
        f"batch_size ({self.batch_size}) must divide buffer_size ({self.buffer_size})"
      )
    if self.step_size not in STEP_SIZES:
      raise ValueError(f"step_size must be one of {STEP_SIZES}; got {self.step_size!r}")
    if self.stage_target not in STAGE_TARGETS:
      raise ValueError(f"stage_target must be one of {STAGE_TARGETS}; got {self.stage_target!r}")
    if self.weighting not in WEIGHTINGS:
      raise ValueError(f"weighting must be one of {WEIGHTINGS}; got {self.weighting!r}")
    if self.normalize not in NORMALIZATIONS:
      raise ValueError(f"normalize must be one of {NORMALIZATIONS}; got {self.normalize!r}")
    if self.normalize == "minibatch" and self.weighting == "resample":
      raise ValueError(
        "normalize='minibatch' needs weighting='weight' (resampling uses the "
        "buffer-normalised weights)"
      )
    if not 0.0 < self.c_fixed <= 1.0:
      raise ValueError(f"c_fixed must lie in (0, 1]; got {self.c_fixed}")
    if self.step_size == "list":
      if len(self.c_list) < self.num_stages or not all(0 < c <= 1 for c in self.c_list):
        raise ValueError(
          f"c_list must hold >= num_stages ({self.num_stages}) values in (0, 1]; got {self.c_list}"
        )
    if self.step_size == "adaptive" and not self.eta_inf:
      check_epsilon(self.epsilon, self.buffer_size)
    if not 0.0 <= self.c_min < self.c_max <= 1.0:
      raise ValueError(f"need 0 <= c_min < c_max <= 1; got ({self.c_min}, {self.c_max})")
    if not 0.0 <= self.ema_decay < 1.0:
      raise ValueError(f"ema_decay must lie in [0, 1); got {self.ema_decay}")

  def optimizer(self, num_steps: int):
    """The optax chain (grad-norm clip -> Adam) built by ``core.optim``."""
    cfg = core_optim.optim_defaults()
    cfg.learning_rate = self.learning_rate
    cfg.b1 = self.b1
    cfg.b2 = self.b2
    cfg.grad_clip = self.grad_clip
    return core_optim.make_optimizer(cfg, num_steps)


class StageProblem(NamedTuple):
  """What a sampler gives the stage loop. All callables are pure and jittable.

  Attributes:
    init_params: ``key -> params`` (zero output layer: P_{theta_0} = P^ref).
    rollout: ``(params, key, n) -> (x (n, ...), ell (n,), r (n,))``: terminal samples of P^theta,
      l = log dP^ref/dP^theta and r(X_T).
    loss: ``(params, key, x (B, ...), w (B,)) -> (loss, info)``, the weighted denoising loss.
  """

  init_params: Callable
  rollout: Callable
  loss: Callable


class ProxResult(NamedTuple):
  """Output of ``run_stages``.

  Attributes:
    params: final EMA parameters.
    history: list of per-stage dicts (``stage``, ``refine``, ``done``, ``stage/c``,
      ``stage/lambda``, ``stage/ess``, ``stage/log_z``, ``stage/elbo``, ``stage/path_kl`` (the
      frozen model's buffer), ``prox/kl_hat``, ``prox/flag``, ``weights/*``, and the last inner
      step's ``loss/*`` and ``train/grad_norm``; ``cost/energy_evals``: target evaluations so far,
      stages x buffer_size).
    final: ``eval/*`` diagnostics of a fresh rollout of the final EMA model.
  """

  params: Any
  history: list
  final: dict


def _eval_stats(ell, r) -> dict:
  """log Z^, ELBO, path KL and ESS of the path weights W = ell + r (``metrics.weight_stats``)."""
  return {k: v for k, v in metrics.weight_stats(ell + r).items() if k.startswith("eval/")}


def steps_per_stage(cfg: ProxConfig) -> int:
  """Inner steps of one stage: epochs_per_stage * (buffer_size // batch_size)."""
  return cfg.epochs_per_stage * (cfg.buffer_size // cfg.batch_size)


def total_stages(cfg: ProxConfig) -> int:
  """The most stages the schedule runs: num_stages proximal (or eta = infinity) stages plus
  refine_stages refinement stages (fewer when lambda reaches lambda_min early)."""
  return cfg.num_stages + cfg.refine_stages


# Keys of ``extras["info"]``: the current stage's diagnostics, set at the stage boundary.
INFO_KEYS = (
  "stage/index",
  "stage/refine",
  "stage/done",
  "stage/c",
  "stage/lambda",
  "stage/ess",
  "stage/log_z",
  "stage/elbo",
  "stage/path_kl",
  "prox/kl_hat",
  "prox/flag",
  "weights/ess_local",
  "weights/ess_global",
  "weights/frac_filtered",
  "weights/frac_clamped",
  "weights/max_wbar",
  "cost/energy_evals",
)


class StageFns(NamedTuple):
  """The stage machinery as a pure ``TrainState`` step, shared by ``run_stages`` and the
  trainer ``Method`` (``pdns.method.PDNSMethod``).

  Attributes:
    init_state: ``key -> TrainState``; params with a zero output layer, ``extras`` holding the
      EMA and frozen parameters, the stage buffer, the epoch's minibatch order, the schedule
      (``sched``: stage, lambda, refining, refinement count) and the stage diagnostics
      (``info``, keys ``INFO_KEYS``).
    update: ``(state, batch) -> (state, metrics)``; ``batch`` is ignored (the data is the buffer
      in ``state.extras``). When ``state.step`` is a multiple of ``steps_per_stage`` it first
      starts a stage: freezes the EMA, rebuilds the buffer from it, chooses c_k, forms and
      normalises the weights, restarts from the EMA with a fresh optimiser state. At each epoch
      start it redraws the minibatch order (multinomial resampling or a permutation). Then one
      minibatch step with an EMA update. Every random draw is keyed by (root key, step), so the
      state alone determines the rest of the run (exact resume, also mid-stage).
    steps_per_stage: inner steps per stage.
    tx: the optax transform (constant learning rate; re-initialised every stage).
  """

  init_state: Callable
  update: Callable
  steps_per_stage: int
  tx: Any


def make_stage_fns(problem: StageProblem, cfg: ProxConfig) -> StageFns:
  """Builds the PDNS stage step for ``problem`` and ``cfg``; see ``StageFns``.

  Stage schedule (stage k = step // steps_per_stage + 1): c_k = 1 and lambda_k = 0 while
  refining (``cfg.eta_inf``: always); otherwise c_fixed, c_list[k-1] or the adaptive solve of
  Eq. 10, and lambda_k = lambda_{k-1}(1 - c_k). Refinement starts after the stage with
  lambda_k < lambda_min or k = num_stages; ``info["stage/done"]`` is 1 on the stage after which
  the fit loop stops (the last refinement stage; with refine_stages = 0 the stage that would
  switch). Past that point the step keeps running stages at eta = infinity (c = 1).
  """
  n, b = cfg.buffer_size, cfg.batch_size
  spe = n // b
  sps = spe * cfg.epochs_per_stage
  tx = cfg.optimizer(sps)
  refine_total = total_stages(cfg) if cfg.eta_inf else cfg.refine_stages
  c_list = jnp.asarray(cfg.c_list if cfg.c_list else (1.0,), jnp.float32)
  f32 = lambda v: jnp.asarray(v, jnp.float32)

  def init_state(key: jax.Array) -> TrainState:
    k_params, _ = jax.random.split(key)
    params = problem.init_params(k_params)
    x, ell, _ = jax.eval_shape(lambda p, k: problem.rollout(p, k, n), params, key)
    sched = {
      "stage": jnp.zeros((), jnp.int32),
      "lam": f32(1.0),
      "refining": jnp.zeros((), jnp.int32),
      "refine_count": jnp.zeros((), jnp.int32),
    }
    extras = {
      "ema": params,
      "frozen": params,
      "buf_x": jnp.zeros(x.shape, x.dtype),
      "buf_log_w": jnp.zeros(ell.shape, jnp.float32),
      "buf_w": jnp.ones(ell.shape, jnp.float32),
      "idx": jnp.zeros((spe * b,), jnp.int32),
      "sched": sched,
      "info": {k: f32(0.0) for k in INFO_KEYS},
    }
    return TrainState.create(params=params, tx=tx, rng=key, extras=extras)

  def begin_stage(state: TrainState) -> TrainState:
    ex = state.extras
    sc = ex["sched"]
    prev = sc["stage"]
    stage = prev + 1
    if cfg.eta_inf:
      refining = jnp.asarray(True)
    else:
      switch = (prev >= 1) & ((sc["lam"] < cfg.lambda_min) | (prev >= cfg.num_stages))
      refining = (sc["refining"] > 0) | switch
    frozen = ex["ema"]  # theta_{k-1}: the previous EMA model
    # The rollout's paths are split over ``data`` (the samplers mark them with ``shard_rows``);
    # the buffer is then gathered: the step-size bisection, weight normalisation and stage
    # statistics over all N samples run replicated on every device (one all-gather per stage).
    x, ell, r = shd.gather_rows(problem.rollout(frozen, state.step_key("stage/rollout"), n))
    ell, r = ell.astype(jnp.float32), r.astype(jnp.float32)
    lam_prev = sc["lam"]
    if cfg.step_size == "adaptive":
      c_a, kl_a, flag_a = solve_step_size(
        ell,
        r,
        cfg.epsilon,
        lam_prev,
        stage_target=cfg.stage_target,
        c_min=cfg.c_min,
        c_max=cfg.c_max,
        iters=cfg.bisect_iters,
      )
    else:
      if cfg.step_size == "fixed":
        c_a = f32(cfg.c_fixed)
      else:
        c_a = c_list[jnp.minimum(stage - 1, c_list.shape[0] - 1)]
      kl_a, flag_a = f32(jnp.nan), jnp.asarray(FEASIBLE, jnp.int32)
    c = jnp.where(refining, f32(1.0), c_a)
    log_w, lam = stage_log_weights(ell, r, c, lam_prev, cfg.stage_target)
    if cfg.stage_target == "ideal":
      log_w = jnp.where(refining, ell + r, log_w)
    lam = jnp.where(refining, f32(0.0), lam)
    kl = jnp.where(refining | jnp.isnan(kl_a), kl_hat(log_w), kl_a)
    flag = jnp.where(refining, FEASIBLE, flag_a)
    w_buf, winfo = normalize_weights(log_w, cfg.clamp_max, cfg.filter_max)
    refine_count = sc["refine_count"] + refining.astype(jnp.int32)
    would_switch = (lam < cfg.lambda_min) | (stage >= cfg.num_stages)
    done = jnp.where(
      refining, refine_count >= refine_total, would_switch & (cfg.refine_stages == 0)
    )
    stats = _eval_stats(ell, r)
    info = {
      "stage/index": stage,
      "stage/refine": refining,
      "stage/done": done,
      "stage/c": c,
      "stage/lambda": lam,
      "stage/ess": stats["eval/ess"],
      "stage/log_z": stats["eval/log_z"],
      "stage/elbo": stats["eval/elbo"],
      "stage/path_kl": stats["eval/path_kl"],
      "prox/kl_hat": kl,
      "prox/flag": flag,
      "weights/ess_local": ess(ell + (1.0 - lam) * r),
      "weights/ess_global": stats["eval/ess"],
      "cost/energy_evals": stage * n,
      **winfo,
    }
    info = {k: f32(info[k]) for k in INFO_KEYS}
    sched = {
      "stage": stage,
      "lam": f32(lam),
      "refining": refining.astype(jnp.int32),
      "refine_count": refine_count,
    }
    extras = dict(
      ex,
      frozen=frozen,
      buf_x=x,
      buf_log_w=log_w.astype(jnp.float32),
      buf_w=w_buf.astype(jnp.float32),
      sched=sched,
      info=info,
    )
    # theta <- EMA, fresh optimiser state: as the reference code, no Adam moments across stages.
    return state.replace(params=frozen, opt_state=tx.init(frozen), extras=extras)

  def begin_epoch(state: TrainState) -> TrainState:
    ex = state.extras
    key = state.step_key("epoch/order")
    if cfg.weighting == "resample":
      idx = resample_indices(key, ex["buf_w"], n)
    else:
      idx = jax.random.permutation(key, n).astype(jnp.int32)
    return state.replace(extras=dict(ex, idx=idx[: spe * b]))

  def update(state: TrainState, batch=None):
    del batch
    s = state.step % sps
    state = jax.lax.cond(s == 0, begin_stage, lambda st: st, state)
    j = s % spe
    state = jax.lax.cond(j == 0, begin_epoch, lambda st: st, state)
    ex = state.extras
    bidx = jax.lax.dynamic_slice_in_dim(ex["idx"], j * b, b)
    xb = jnp.take(ex["buf_x"], bidx, axis=0)
    if cfg.weighting == "resample":
      wb = jnp.ones((b,), jnp.float32)
    elif cfg.normalize == "minibatch":
      wb = normalize_weights(ex["buf_log_w"][bidx], cfg.clamp_max, cfg.filter_max)[0]
    else:
      wb = ex["buf_w"][bidx]
    # Data parallel (under the trainer's ``rows_mesh``): the minibatch rows and their weights are
    # split over the mesh's ``data`` axis; each device takes its rows from the replicated buffer,
    # the loss's per-sample draws follow, and the partitioner sums the gradients (all-reduce).
    xb, wb = shd.shard_rows((xb, wb))

    def loss_fn(p):
      return problem.loss(p, state.step_key(), xb, wb)

    (val, linfo), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
    state, gnorm = state.apply_gradients(grads)
    ema = core_optim.ema_update(ex["ema"], state.params, cfg.ema_decay)
    state = state.replace(extras=dict(ex, ema=ema))
    metrics = dict(linfo)
    metrics.update({"loss/wdce": val, "train/grad_norm": gnorm})
    metrics.update(ex["info"])
    return state, metrics

  return StageFns(init_state=init_state, update=update, steps_per_stage=sps, tx=tx)


@functools.lru_cache(maxsize=8)
def _compiled(problem: StageProblem, cfg: ProxConfig):
  """Jitted init, one-stage trainer (a ``lax.scan`` of the guarded step over a stage) and
  rollout for (problem, cfg); the 8 most recently used pairs stay cached."""
  fns = make_stage_fns(problem, cfg)
  step = core_trainer.make_step_fn(fns.update)

  @jax.jit
  def train_stage(state):
    def one(carry, _):
      state, bad = carry
      state, metrics, bad = step(state, None, bad)
      return (state, bad), metrics

    (state, bad), metrics = jax.lax.scan(
      one, (state, jnp.asarray(-1, jnp.int32)), None, length=fns.steps_per_stage
    )
    return state, jax.tree_util.tree_map(lambda m: m[-1], metrics), bad

  rollout = jax.jit(lambda p, k: problem.rollout(p, k, cfg.buffer_size))
  return jax.jit(fns.init_state), train_stage, rollout


def run_stages(
  problem: StageProblem,
  cfg: ProxConfig,
  key: jax.Array,
  callback: Callable[[dict], None] | None = None,
) -> ProxResult:
  """The PDNS stage loop; ``cfg.eta_inf`` gives the plain WDCE baseline.

  Runs ``make_stage_fns(problem, cfg).update`` (the step the trainer ``Method`` uses) one stage
  at a time, until the schedule's last stage (``info["stage/done"]``).

  Args:
    problem: the sampler's hooks.
    cfg: stage-loop configuration.
    key: root PRNG key (the ``TrainState`` root key).
    callback: optional function called with each stage's history dict (e.g. a metrics writer).

  Returns:
    ``ProxResult(params, history, final)``.

  Raises:
    FloatingPointError: a loss or gradient norm became non-finite (stage and step named).
  """
  init, train_stage, rollout = _compiled(problem, cfg)
  state = init(key)
  history = []
  for _ in range(total_stages(cfg)):
    state, last, bad = train_stage(state)
    info = {k: float(v) for k, v in jax.device_get(state.extras["info"]).items()}
    stage = int(info.pop("stage/index"))
    if int(bad) >= 0:
      raise FloatingPointError(
        f"PDNS stage {stage}: loss or gradient norm not finite from step "
        f"{int(bad)} (stage steps {(stage - 1) * steps_per_stage(cfg)}.."
        f"{stage * steps_per_stage(cfg) - 1})"
      )
    rec = {
      "stage": stage,
      "refine": bool(info.pop("stage/refine")),
      "done": bool(info.pop("stage/done")),
    }
    rec["prox/flag"] = int(info.pop("prox/flag"))
    rec.update(info)
    rec.update(
      {
        k: float(v)
        for k, v in jax.device_get(last).items()
        if not k.startswith(("stage/", "prox/", "weights/"))
      }
    )
    history.append(rec)
    if callback is not None:
      callback(rec)
    if rec["done"]:
      break
  ema = state.extras["ema"]
  x, ell, r = rollout(ema, jax.random.split(key)[1])
  final = {k: float(v) for k, v in _eval_stats(ell, r).items()}
  return ProxResult(params=ema, history=history, final=final)


def history_array(history: list, key: str) -> np.ndarray:
  """One field of a ``ProxResult.history`` as a float array (num_stages,)."""
  return np.asarray([h[key] for h in history], np.float64)


class StageSampler:
  """``problem`` / ``fit`` / ``sample`` shared by the continuous and discrete samplers.

  A subclass provides ``init_params(key)``, ``rollout(params, key, n) -> (x, ell, r)`` and
  ``loss(params, key, x, w)``; the stage loop needs nothing else.
  """

  def problem(self) -> StageProblem:
    """The ``StageProblem`` of this sampler."""
    return StageProblem(init_params=self.init_params, rollout=self.rollout, loss=self.loss)

  def stage_fns(self, cfg: "ProxConfig") -> StageFns:
    """The pure stage step of this sampler (what the trainer ``Method`` runs)."""
    return make_stage_fns(self.problem(), cfg)

  def fit(self, cfg: "ProxConfig", key: jax.Array, callback: Callable | None = None):
    """Runs the PDNS stage loop with ``cfg``; returns ``ProxResult``."""
    return run_stages(self.problem(), cfg, key, callback)

  def sample(self, params, key: jax.Array, n: int):
    """n samples of the model and their log path weights W = l + r (n,)."""
    x, ell, r = self.rollout(params, key, n)
    return x, ell + r
