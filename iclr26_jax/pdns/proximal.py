"""Proximal machinery of PDNS shared by the continuous and discrete samplers.

Paper: W. Guo, J. Choi, Y. Zhu, M. Tao, Y. Chen, "Proximal Diffusion Neural Sampler", ICLR 2026
(arXiv 2510.03824); reference PyTorch code github.com/AlexandreGUO2001/PDNS.
Spec: ``shared/specs/pdns.md`` §4–§9.

Stage k minimises F(P) + (1/eta_k) KL(P || P_{theta_{k-1}}); with c_k = eta_k / (1 + eta_k) the
stage optimum is the previous model tilted by (dP*/dP_{theta_{k-1}})^{c_k} (Eq. 6) and the ideal
iterates anneal geometrically, lambda_k = prod_{i<=k} (1 - c_i) (Eq. 7). Here:

* ``stage_log_weights``: Eq. 8a (``stage_target="ideal"``, the re-anchored P_k target:
  l + (1 - lambda_k) r) and Eq. 8b (``"prox"``, the tempered P_{theta*_k} target: c (l + r)).
* ``normalize_weights``: self-normalisation N softmax(log w) with filtering (non-finite, > 1e8,
  < 0 -> 0) and clamping to [0, clamp_max] after normalising; ``resample_indices``: multinomial.
* ``kl_hat`` / ``solve_step_size``: the trust-region equation KL^(c) = eps (Eq. 10) solved by a
  fixed-iteration bisection on [c_min, c_max] (jit/vmap friendly), clamping to the bracket and
  flagging when eps is unreachable; ``check_epsilon`` rejects eps >= log N.
* ``run_stages``: the stage loop (spec §9). Each stage restarts from the EMA weights with a fresh
  optax state (``core.optim.make_optimizer``, ``core.train_state.TrainState``), rebuilds the
  buffer from the frozen previous EMA model, chooses c_k (fixed, list or adaptive), forms the
  weights, and runs ``epochs_per_stage`` epochs of minibatch steps as one jitted ``lax.scan``
  wrapped by ``core.trainer.make_step_fn`` (non-finite guard). Once lambda_k < ``lambda_min`` (or
  the stage cap is hit) it switches to ``refine_stages`` stages at eta = infinity (c = 1,
  lambda = 0). ``eta_inf=True`` runs every stage at eta = infinity: the non-proximal WDCE baseline
  through the same code.
"""

from __future__ import annotations

import collections
import dataclasses
import math
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from iclr26_jax.core import optim as core_optim
from iclr26_jax.core import trainer as core_trainer
from iclr26_jax.core.train_state import TrainState

__all__ = ["STAGE_TARGETS", "STEP_SIZES", "WEIGHTINGS", "NORMALIZATIONS", "ProxConfig",
           "StageProblem", "ProxResult", "stage_log_weights", "normalize_weights", "kl_hat",
           "ess", "solve_step_size", "check_epsilon", "resample_indices", "run_stages"]

STAGE_TARGETS = ("prox", "ideal")
STEP_SIZES = ("fixed", "list", "adaptive")
WEIGHTINGS = ("resample", "weight")
NORMALIZATIONS = ("buffer", "minibatch")

# Flags of ``solve_step_size``.
FEASIBLE, EPS_ABOVE_BRACKET, EPS_BELOW_BRACKET = 0, 1, 2


def _check_vec(x: jax.Array, name: str, n: int | None = None) -> None:
  if x.ndim != 1 or (n is not None and x.shape[0] != n):
    want = f"({n},)" if n is not None else "(N,)"
    raise ValueError(f"{name} must have shape {want}; got {tuple(x.shape)}")


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
  return jnp.exp(2 * jax.nn.logsumexp(log_w) - jax.nn.logsumexp(2 * log_w)) / log_w.shape[0]


def normalize_weights(log_w: jax.Array, clamp_max: float = 100.0, filter_max: float = 1e8):
  """Self-normalised weights with mean 1, filtered then clamped (spec §7, reference convention).

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
  info = {"weights/frac_filtered": 1.0 - jnp.mean(keep.astype(w.dtype)),
          "weights/frac_clamped": jnp.mean(clamped.astype(w.dtype)),
          "weights/max_wbar": jnp.max(jnp.where(finite, p, 0.0))}
  return w, info


def resample_indices(key: jax.Array, w: jax.Array, n: int) -> jax.Array:
  """n multinomial draws (with replacement) of indices proportional to w (N,) -> (n,) int32."""
  _check_vec(w, "w")
  return jax.random.categorical(key, jnp.log(w), shape=(n,)).astype(jnp.int32)


def check_epsilon(epsilon: float, n: int) -> None:
  """Rejects a trust-region radius N samples cannot resolve (eps >= log N) or eps <= 0."""
  if not epsilon > 0:
    raise ValueError(f"epsilon must be > 0; got {epsilon}")
  if epsilon >= math.log(n):
    raise ValueError(f"epsilon = {epsilon} is >= log N = log({n}) = {math.log(n):.4g}: a buffer of "
                     f"N = {n} samples cannot resolve a KL that large; lower epsilon or raise N")


def solve_step_size(ell: jax.Array, r: jax.Array, epsilon, lam_prev=1.0, *,
                    stage_target: str = "prox", c_min: float = 0.01, c_max: float = 0.99,
                    iters: int = 50):
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
  """Stage-loop hyperparameters (spec §7–§9). Frozen and hashable (a jit cache key).

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
    learning_rate, b1, b2, grad_clip: Adam settings (``core.optim``), fresh state every stage.
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
      raise ValueError(f"batch_size ({self.batch_size}) must divide buffer_size "
                       f"({self.buffer_size})")
    if self.step_size not in STEP_SIZES:
      raise ValueError(f"step_size must be one of {STEP_SIZES}; got {self.step_size!r}")
    if self.stage_target not in STAGE_TARGETS:
      raise ValueError(f"stage_target must be one of {STAGE_TARGETS}; got {self.stage_target!r}")
    if self.weighting not in WEIGHTINGS:
      raise ValueError(f"weighting must be one of {WEIGHTINGS}; got {self.weighting!r}")
    if self.normalize not in NORMALIZATIONS:
      raise ValueError(f"normalize must be one of {NORMALIZATIONS}; got {self.normalize!r}")
    if self.normalize == "minibatch" and self.weighting == "resample":
      raise ValueError("normalize='minibatch' needs weighting='weight' (resampling uses the "
                       "buffer-normalised weights)")
    if not 0.0 < self.c_fixed <= 1.0:
      raise ValueError(f"c_fixed must lie in (0, 1]; got {self.c_fixed}")
    if self.step_size == "list":
      if len(self.c_list) < self.num_stages or not all(0 < c <= 1 for c in self.c_list):
        raise ValueError(f"c_list must hold >= num_stages ({self.num_stages}) values in (0, 1]; "
                         f"got {self.c_list}")
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
    history: list of per-stage dicts (``stage``, ``stage/c``, ``stage/lambda``, ``stage/ess``,
      ``prox/kl_hat``, ``prox/flag``, ``refine``, ``eval/*`` of the frozen model, ``weights/*``,
      ``loss/wdce``).
    final: ``eval/*`` diagnostics of a fresh rollout of the final EMA model.
  """
  params: Any
  history: list
  final: dict


def _eval_stats(ell, r) -> dict:
  w = ell + r
  n = w.shape[0]
  log_z = jax.nn.logsumexp(w) - math.log(n)
  return {"eval/log_z": log_z, "eval/elbo": jnp.mean(w), "eval/path_kl": log_z - jnp.mean(w),
          "eval/ess": ess(w)}


_TRAIN_FIELDS = ("epochs_per_stage", "buffer_size", "batch_size", "weighting", "normalize",
                 "clamp_max", "filter_max", "ema_decay", "learning_rate", "b1", "b2", "grad_clip")


def _train_key(cfg: ProxConfig) -> tuple:
  return tuple(getattr(cfg, f) for f in _TRAIN_FIELDS)


_CACHE: "collections.OrderedDict" = collections.OrderedDict()


def _compiled(problem: StageProblem, cfg: ProxConfig):
  """Jitted rollout, weights and stage trainer, keyed by the problem and the training fields of
  ``cfg`` alone: configs that differ only in the schedule (e.g. the eta = infinity baseline and
  the proximal run) share one compilation. Keeps the 8 most recent entries."""
  key = (problem, _train_key(cfg))
  if key in _CACHE:
    _CACHE.move_to_end(key)
    return _CACHE[key]
  n = cfg.buffer_size
  rollout = jax.jit(lambda p, k: problem.rollout(p, k, n))
  weights_fn = jax.jit(lambda lw: normalize_weights(lw, cfg.clamp_max, cfg.filter_max))
  _CACHE[key] = (rollout, weights_fn, _make_stage_trainer(problem, cfg))
  while len(_CACHE) > 8:
    _CACHE.popitem(last=False)
  return _CACHE[key]


def _make_stage_trainer(problem: StageProblem, cfg: ProxConfig):
  n, b = cfg.buffer_size, cfg.batch_size
  steps_per_epoch = n // b
  total = steps_per_epoch * cfg.epochs_per_stage
  tx = cfg.optimizer(total)

  def update(state: TrainState, batch):
    xb, wb = batch

    def loss_fn(p):
      return problem.loss(p, state.step_key(), xb, wb)
    (val, info), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
    state, gnorm = state.apply_gradients(grads)
    ema = core_optim.ema_update(state.extras["ema"], state.params, cfg.ema_decay)
    state = state.replace(extras={"ema": ema})
    return state, {"loss/wdce": val, "train/grad_norm": gnorm}

  step = core_trainer.make_step_fn(update)

  @jax.jit
  def train(params, x, log_w, w_buf, key):
    state = TrainState.create(params=params, tx=tx, rng=key, extras={"ema": params})
    ekeys = jax.random.split(jax.random.fold_in(key, 1), cfg.epochs_per_stage)

    def epoch(carry, ekey):
      state, bad = carry
      if cfg.weighting == "resample":
        idx = resample_indices(ekey, w_buf, n)
      else:
        idx = jax.random.permutation(ekey, n)
      idx = idx[: steps_per_epoch * b].reshape(steps_per_epoch, b)

      def one(carry, bidx):
        state, bad = carry
        xb = jnp.take(x, bidx, axis=0)
        if cfg.weighting == "resample":
          wb = jnp.ones((b,), log_w.dtype)
        elif cfg.normalize == "minibatch":
          wb = normalize_weights(log_w[bidx], cfg.clamp_max, cfg.filter_max)[0]
        else:
          wb = w_buf[bidx]
        state, metrics, bad = step(state, (xb, wb), bad)
        return (state, bad), metrics

      (state, bad), metrics = jax.lax.scan(one, (state, bad), idx)
      return (state, bad), metrics

    (state, bad), metrics = jax.lax.scan(epoch, (state, jnp.asarray(-1, jnp.int32)), ekeys)
    last = jax.tree_util.tree_map(lambda m: jnp.mean(m[-1]), metrics)
    return state.extras["ema"], last, bad

  return train


def run_stages(problem: StageProblem, cfg: ProxConfig, key: jax.Array,
               callback: Callable[[dict], None] | None = None) -> ProxResult:
  """The PDNS stage loop (spec §9); ``cfg.eta_inf`` gives the plain WDCE baseline.

  Args:
    problem: the sampler's hooks.
    cfg: stage-loop configuration.
    key: root PRNG key; stage k uses keys folded from (key, k).
    callback: optional function called with each stage's history dict (e.g. a metrics writer).

  Returns:
    ``ProxResult(params, history, final)``.

  Raises:
    FloatingPointError: a loss or gradient norm became non-finite (stage and step named).
  """
  n = cfg.buffer_size
  k_init, k_loop = jax.random.split(key)
  ema = problem.init_params(k_init)
  # The cache key holds only training fields, so the cfg it stores is used for those alone.
  rollout, weights_fn, train = _compiled(problem, cfg)
  solve = jax.jit(lambda ell, r, lam: solve_step_size(
      ell, r, cfg.epsilon, lam, stage_target=cfg.stage_target, c_min=cfg.c_min, c_max=cfg.c_max,
      iters=cfg.bisect_iters))
  lam = 1.0
  refining = cfg.eta_inf
  refine_left = cfg.num_stages + cfg.refine_stages if cfg.eta_inf else cfg.refine_stages
  history = []
  stage = 0
  while True:
    stage += 1
    k_roll, k_train = jax.random.split(jax.random.fold_in(k_loop, stage))
    x, ell, r = rollout(ema, k_roll)                       # buffer from the frozen EMA model
    flag, kl = 0, float("nan")
    if refining:
      c = 1.0
    elif cfg.step_size == "fixed":
      c = cfg.c_fixed
    elif cfg.step_size == "list":
      c = float(cfg.c_list[stage - 1])
    else:
      c_arr, kl_arr, flag_arr = solve(ell, r, jnp.asarray(lam, ell.dtype))
      c, kl, flag = float(c_arr), float(kl_arr), int(flag_arr)
    log_w, lam_new = stage_log_weights(ell, r, jnp.asarray(c, ell.dtype),
                                       jnp.asarray(lam, ell.dtype), cfg.stage_target)
    lam_new = 0.0 if refining else float(lam_new)
    if refining and cfg.stage_target == "ideal":
      log_w = ell + r
    if not math.isfinite(kl):
      kl = float(kl_hat(log_w))
    w_buf, winfo = weights_fn(log_w)
    ema, tinfo, bad = train(ema, x, log_w, w_buf, k_train)
    if int(bad) >= 0:
      raise FloatingPointError(f"PDNS stage {stage}: loss or gradient norm not finite from inner "
                               f"step {int(bad)} (of {cfg.epochs_per_stage * (n // cfg.batch_size)})")
    lam = lam_new
    rec = {"stage": stage, "refine": bool(refining), "stage/c": c, "stage/lambda": lam,
           "prox/kl_hat": kl, "prox/flag": flag,
           "weights/ess_local": float(ess(ell + (1.0 - lam) * r))}
    rec.update({k: float(v) for k, v in _eval_stats(ell, r).items()})
    rec["stage/ess"] = rec["eval/ess"]
    rec["weights/ess_global"] = rec["eval/ess"]
    rec.update({k: float(v) for k, v in winfo.items()})
    rec.update({k: float(v) for k, v in tinfo.items()})
    history.append(rec)
    if callback is not None:
      callback(rec)
    if refining:
      refine_left -= 1
      if refine_left <= 0:
        break
    elif lam < cfg.lambda_min or stage >= cfg.num_stages:
      if cfg.refine_stages == 0:
        break
      refining = True
  x, ell, r = rollout(ema, jax.random.fold_in(k_loop, 0))
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

  def fit(self, cfg: "ProxConfig", key: jax.Array, callback: Callable | None = None):
    """Runs the PDNS stage loop with ``cfg``; returns ``ProxResult``."""
    return run_stages(self.problem(), cfg, key, callback)

  def sample(self, params, key: jax.Array, n: int):
    """n samples of the model and their log path weights W = l + r (n,)."""
    x, ell, r = self.rollout(params, key, n)
    return x, ell + r
