"""CSBM: categorical Schrödinger-bridge matching by discrete-time IMF (D-IMF), two directions.

A ``SimpleMLP`` predicts the endpoint and its per-coordinate transition mixes the reference bridge
over the prediction (D3PM's x̂-parameterisation, Eq. 14, in the forward time of q, rows read as
rows). It is bridge-matched (``bridge_matching_loss``) in two directions, p_0 -> p_1 under q and
p_1 -> p_0 under ``reversed_reference``, alternating every ``epoch_steps``: first on the
independent coupling, then on the other direction's EMA rollouts (IMF). Direction and phase are
functions of the step counter, so a resumed run reproduces an uninterrupted one.

Paper (solver): G. Ksenofontov, A. Korotin, "Categorical Schrödinger Bridge Matching", ICML 2025;
benchmarked in X. Aramayo Carrasco et al., "Entering the Era of Discrete Diffusion Models: A
Benchmark for Schrödinger Bridges and Entropic Optimal Transport", ICLR 2026 (arXiv 2509.23348);
reference PyTorch code github.com/gregkseno/catsbench. The endpoint (x̂) parameterisation is
D3PM's (Austin et al., NeurIPS 2021). The model, loss and schedule: docs/methods/dsb.md ("The
algorithm").
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, NamedTuple

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from iclr26_jax.core import optim as core_optim
from iclr26_jax.core import sharding as shd
from iclr26_jax.core import validate
from iclr26_jax.core.loop import run_chunks
from iclr26_jax.core.train_state import TrainState
from iclr26_jax.dsb import benchmark as bm
from iclr26_jax.dsb import metrics as dsb_metrics
from iclr26_jax.dsb import reference as ref_lib
from iclr26_jax.dsb.reference import ReferenceProcess, check_states
from iclr26_jax.dsb.solvers import dlightsb as dls
from iclr26_jax.dsb.solvers import dlightsb_m as dlsm
from iclr26_jax.nn import mlp

__all__ = [
  "LOSS_KINDS",
  "DIRECTIONS",
  "KL_REDUCTIONS",
  "INITS",
  "SimpleMLP",
  "TorchLinear",
  "TORCH_LINEAR_KERNEL_INIT",
  "torch_linear_bias_init",
  "CSBMConfig",
  "CSBMOutput",
  "CSBM",
  "reversed_reference",
  "transition_log_probs",
  "bridge_matching_loss",
  "sample_endpoints",
  "model_transition_logits",
  "init_state",
  "csbm_train_step",
  "trains_forward",
  "train_chunk",
  "make_output",
]

LOSS_KINDS = ("kl", "mse")
DIRECTIONS = ("forward", "backward")
KL_REDUCTIONS = ("mean", "sum")

# step_fn(state, problem, cfg) -> (state, metrics): one training step of a CSBM-type solver.
StepFn = Callable[[TrainState, Any, Any], tuple[TrainState, dict]]


# --------------------------------------------------------------------------------------------
# Network and transition.
# --------------------------------------------------------------------------------------------


INITS = ("torch", "flax")


def torch_linear_bias_init(fan_in: int) -> Callable:
  """PyTorch ``nn.Linear``'s default bias init: U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
  bound = 1.0 / float(np.sqrt(fan_in))

  def init(key, shape, dtype=jnp.float32):
    return jax.random.uniform(key, shape, dtype, -bound, bound)

  return init


TORCH_LINEAR_KERNEL_INIT = nn.initializers.variance_scaling(1.0 / 3.0, "fan_in", "uniform")
"""PyTorch ``nn.Linear``'s default weight init, kaiming_uniform(a = sqrt(5)): gain^2 = 2 / (1 + 5)
= 1/3, so U(-b, b) with b = sqrt(3 gain^2 / fan_in) = 1/sqrt(fan_in) (Flax kernel (in, out))."""


class TorchLinear(nn.Module):
  """A Dense layer initialised as PyTorch's ``nn.Linear`` (weights and bias U(+-1/sqrt(fan_in))).

  Same variables as ``flax.linen.Dense`` (``kernel`` (in, out), ``bias`` (out,)); only the
  initialisation differs (Flax: lecun_normal kernel, zero bias).

  Attributes:
    features: output width.
  """

  features: int

  @nn.compact
  def __call__(self, x: jax.Array) -> jax.Array:
    """x (..., F) -> (..., features)."""
    fan_in = x.shape[-1]
    kernel = self.param("kernel", TORCH_LINEAR_KERNEL_INIT, (fan_in, self.features), jnp.float32)
    bias = self.param("bias", torch_linear_bias_init(fan_in), (self.features,), jnp.float32)
    return x @ kernel + bias


class SimpleMLP(nn.Module):
  """Endpoint-prediction MLP of the HD experiments (catsbench ``SimpleMLP``).

  Attributes:
    dim: D.
    num_categories: S.
    num_times: N + 1 (one learned time embedding of size D per model step).
    hidden: hidden width (128).
    num_layers: hidden layers (3), ReLU.
    linear_init: "torch" (default, the reference's: PyTorch ``nn.Linear``'s default
      U(+-1/sqrt(fan_in)) for weights and biases, ``TorchLinear``) or "flax" (``nn.Dense``'s
      lecun_normal kernels and zero biases). The time embedding is N(0, 1) either way (Flax
      ``nn.Embed`` and torch ``nn.Embedding`` defaults). On raw category indices in [0, S) the
      Flax init gives endpoint logits about sqrt(3)^4 / 2^(3/2) ~ 3x larger than torch's.
  """

  dim: int
  num_categories: int
  num_times: int
  hidden: int = 128
  num_layers: int = 3
  linear_init: str = "torch"

  @nn.compact
  def __call__(self, x: jax.Array, t: jax.Array) -> jax.Array:
    """x (B, D) int states, t (B,) int steps in [0, N] -> (B, D, S) endpoint logits."""
    if self.linear_init not in INITS:
      raise ValueError(f"linear_init must be one of {INITS}, got {self.linear_init!r}")
    emb = nn.Embed(self.num_times, self.dim, name="time_embedding")(t)
    h = jnp.concatenate([x.astype(jnp.float32), emb.astype(jnp.float32)], axis=-1)
    names = [f"hidden_{i}" for i in range(self.num_layers)] + ["logits"]
    out = mlp(
      h,
      (self.hidden,) * self.num_layers,
      self.dim * self.num_categories,
      activation=nn.relu,
      dense=TorchLinear if self.linear_init == "torch" else nn.Dense,
      names=names,
    )
    return out.reshape(x.shape[0], self.dim, self.num_categories)


def reversed_reference(reference: ReferenceProcess) -> ReferenceProcess:
  """The time-reversed reference of the backward direction: Q_step^T and Q̄_t^T.

  Its bridges pinned at (x_{N+1}, x_0) are q's bridges read backwards, q(x_{t-1} | x_t, x_0) ∝
  Q_step(x_{t-1}, x_t) Q̄_{t-1}(x_0, x_{t-1}); for a symmetric Q it equals q.
  """
  return reference.replace(
    log_q_step=reference.log_q_step.T, log_q_bar=jnp.swapaxes(reference.log_q_bar, -1, -2)
  )


def transition_log_probs(
  endpoint_logits: jax.Array, reference: ReferenceProcess, x_t: jax.Array, t: Any
) -> jax.Array:
  """Per-coordinate model transition of Eq. 14 (forward time, log domain).

  log p^d(x_{t+1} = j | x_t) = log Q_step(x_t^d, j) + logsumexp_e(log softmax(f)_e^d
  + log Q̄_{N-t}(j, e)), normalised over j; at t = N it is log softmax(f) (the predicted
  endpoint).

  Args:
    endpoint_logits: (B, D, S) endpoint logits f (any normalisation; -inf allowed).
    reference: the direction's reference process (S categories, N intermediate steps).
    x_t: (B, D) int states at time t.
    t: int, traced int scalar, or (B,) ints in [0, N].

  Returns:
    (B, D, S) normalised log-probabilities over x_{t+1}^d.
  """
  want = tuple(x_t.shape) + (reference.num_categories,)
  message = (
    f"endpoint_logits must have shape (B, D, S) = {want}, got {tuple(endpoint_logits.shape)}"
  )
  chex.assert_rank(endpoint_logits, 3, exception_type=ValueError, custom_message=message)
  chex.assert_shape(endpoint_logits, want, exception_type=ValueError, custom_message=message)
  n = reference.num_steps
  t = jnp.broadcast_to(jnp.asarray(t, jnp.int32), x_t.shape[:1])
  log_end = jax.nn.log_softmax(endpoint_logits, axis=-1)  # (B, D, S_e)
  log_reach = reference.log_q_bar[n - t]  # (B, S_j, S_e): Q̄_{N-t}(j, e)
  mix = jax.nn.logsumexp(log_end[:, :, None, :] + log_reach[:, None, :, :], axis=-1)
  rows = jnp.take(reference.log_q_step, x_t, axis=0)  # (B, D, S_j): Q_step(x_t^d, j)
  out = jax.nn.log_softmax(rows + mix, axis=-1)
  return jnp.where((t == n)[:, None, None], log_end, out)


def _per_row_time(
  fn: Callable, reference: ReferenceProcess, a: jax.Array, b: jax.Array, t: jax.Array
) -> jax.Array:
  """Applies a reference.py bridge law (scalar t) row by row with a per-row time t (B,)."""
  return jax.vmap(lambda ar, br, tr: fn(reference, ar[None], br[None], tr)[0])(a, b, t)


def bridge_matching_loss(
  endpoint_logits_fn: Callable[[jax.Array, jax.Array], jax.Array],
  reference: ReferenceProcess,
  x_start: jax.Array,
  x_end: jax.Array,
  t: jax.Array,
  rng: jax.Array,
  loss: str = "kl",
  kl_reduction: str = "mean",
) -> tuple[jax.Array, dict[str, jax.Array]]:
  """CSBM bridge-matching loss for coupled pairs (x_start, x_end) at per-sample times t.

  x_t ~ q(x_t | x_start, x_end) (Eq. 10); target q^d(x_{t+1} | x_t^d, x_end^d); model Eq. 14.

  Args:
    endpoint_logits_fn: (x_t (B, D) int32, t (B,) int32) -> (B, D, S) endpoint logits.
    reference: the direction's reference process.
    x_start: (B, D) int start states (time 0).
    x_end: (B, D) int end states (time N + 1), row b coupled with x_start[b].
    t: (B,) int times in [0, N].
    rng: PRNG key for the bridge draw x_t.
    loss: "kl" (KL(q || p), see kl_reduction) or "mse" (sum_{d,j} (q - p)^2, batch mean).
    kl_reduction: "mean" (KL averaged over d and the batch, the reference's) or "sum" (summed
      over d, batch mean).

  Returns:
    (scalar loss, {"train/target_entropy": mean summed entropy of the bridge targets}).
  """
  if loss not in LOSS_KINDS:
    raise ValueError(f"loss must be one of {LOSS_KINDS}, got {loss!r}")
  x_t = dls._categorical_flat(
    rng, _per_row_time(ref_lib.bridge_log_probs, reference, x_start, x_end, t)
  )
  target = _per_row_time(ref_lib.bridge_step_log_probs, reference, x_t, x_end, t)
  model = transition_log_probs(endpoint_logits_fn(x_t, t), reference, x_t, t)
  if kl_reduction not in KL_REDUCTIONS:
    raise ValueError(f"kl_reduction must be one of {KL_REDUCTIONS}, got {kl_reduction!r}")
  value, info = dlsm.per_coordinate_matching_loss(target, model, loss)
  if loss == "kl" and kl_reduction == "mean":
    value = value / x_t.shape[-1]
  return value, info


def _apply(net: SimpleMLP, params: Any, x: jax.Array, t: jax.Array) -> jax.Array:
  return net.apply({"params": params}, x, t)


def model_transition_logits(
  net: SimpleMLP,
  params: Any,
  reference: ReferenceProcess,
  x_t: jax.Array,
  t: Any,
  chunk_elements: int = bm.DEFAULT_CHUNK_ELEMENTS,
) -> jax.Array:
  """The model's per-coordinate transition log-probs at one time, chunked over rows.

  Args:
    net: the network definition.
    params: its parameters.
    reference: the direction's reference.
    x_t: (B, D) int states.
    t: int or traced int scalar in [0, N].
    chunk_elements: bound on the (rows, D, S, S) intermediate of one chunk.

  Returns:
    (B, D, S) log-probabilities of x_{t+1}.
  """
  t = jnp.asarray(t, jnp.int32)
  d, s = x_t.shape[-1], reference.num_categories

  def row(x_row):
    x1, t1 = x_row[None].astype(jnp.int32), t[None]
    return transition_log_probs(_apply(net, params, x1, t1), reference, x1, t1)[0]

  return bm._map_rows(row, x_t, d * s * s, chunk_elements)


def sample_endpoints(
  net: SimpleMLP,
  params: Any,
  reference: ReferenceProcess,
  rng: jax.Array,
  x0: jax.Array,
  chunk_elements: int = bm.DEFAULT_CHUNK_ELEMENTS,
) -> jax.Array:
  """Runs the full (N+1)-step model chain from x0 and returns its endpoints.

  Every step draws x_{t+1}^d independently from Eq. 14 (Gumbel-max with a flat noise draw);
  the last step draws from the predicted endpoint. Rows are mapped in chunks so that one
  chunk's (rows, D, S, S) intermediate has at most ``chunk_elements`` entries.

  Args:
    net: the network definition.
    params: its parameters.
    reference: the direction's reference.
    rng: PRNG key.
    x0: (B, D) int start states.
    chunk_elements: chunk bound.

  Returns:
    (B, D) int32 endpoints x_{N+1}.
  """
  n = reference.num_steps
  d, s = x0.shape[-1], reference.num_categories
  keys = jax.random.split(rng, x0.shape[0])

  def row(args):
    key, x_row = args

    def step(x, t):
      x1, t1 = x[None], t[None]
      logp = transition_log_probs(_apply(net, params, x1, t1), reference, x1, t1)[0]
      noise = jax.random.gumbel(jax.random.fold_in(key, t), (d * s,), logp.dtype)
      return jnp.argmax(logp + noise.reshape(d, s), axis=-1).astype(jnp.int32), None

    x_end, _ = jax.lax.scan(step, x_row, jnp.arange(n + 1, dtype=jnp.int32))
    return x_end

  # The rows are split over ``data`` in a training step (``shd.shard_rows``): bound per device.
  return bm._map_rows(row, (keys, x0.astype(jnp.int32)), d * s * s, chunk_elements, split=True)


# --------------------------------------------------------------------------------------------
# Configuration.
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class CSBMConfig:
  """Hyperparameters of CSBM (defaults: the paper's HD settings); frozen and hashable (a jit key).

  Attributes:
    train_steps: total optimiser steps (paper HD: 14 epochs x 20k = 280k).
    steps_per_chunk: steps per compiled ``lax.scan`` call; must divide ``train_steps``.
    epoch_steps: steps per epoch; the trained direction alternates every epoch (20k).
    num_first_iterations: backward + forward cycles on the independent coupling before the IMF
      couplings (3).
    batch_size: B (128).
    hidden: MLP width (128).
    num_layers: MLP hidden layers (3).
    loss: "kl" (reference default) or "mse".
    kl_reduction: "mean" (default, the reference's: the KL averaged over the D coordinates and
      the batch) or "sum" (summed over D, batch mean; D times the mean). Only ``loss="kl"``.
    first_direction: "forward" (default, the reference's: epoch 0 trains the forward model) or
      "backward" (epoch 0 trains the backward model). Ignored by alpha-CSBM (both every step).
    learning_rate: AdamW learning rate (1e-4), constant.
    b1: Adam beta1 (0.95).
    b2: Adam beta2 (0.99).
    weight_decay: AdamW weight decay (PyTorch's default 0.01).
    grad_clip: global-norm clipping, 0 disables.
    ema_decay: EMA decay of each direction's parameters (0.999).
    chunk_elements: bound on the (rows, D, S, S) intermediates of model rollouts.
  """

  train_steps: int = 280_000
  steps_per_chunk: int = 1000
  epoch_steps: int = 20_000
  num_first_iterations: int = 3
  batch_size: int = 128
  hidden: int = 128
  num_layers: int = 3
  loss: str = "kl"
  kl_reduction: str = "mean"
  first_direction: str = "forward"
  learning_rate: float = 1e-4
  b1: float = 0.95
  b2: float = 0.99
  weight_decay: float = 0.01
  grad_clip: float = 0.0
  ema_decay: float = 0.999
  chunk_elements: int = bm.DEFAULT_CHUNK_ELEMENTS

  def __post_init__(self):
    self.validate()

  def validate(self) -> None:
    """Raises ValueError naming the first bad field."""
    dls.check_training_fields(self)
    validate.positive_int(self.epoch_steps, "epoch_steps", 1)
    validate.positive_int(self.num_first_iterations, "num_first_iterations", 0)
    validate.positive_int(self.hidden, "hidden", 1)
    validate.positive_int(self.num_layers, "num_layers", 1)
    if self.loss not in LOSS_KINDS:
      raise ValueError(f"loss must be one of {LOSS_KINDS}, got {self.loss!r}")
    if self.kl_reduction not in KL_REDUCTIONS:
      raise ValueError(f"kl_reduction must be one of {KL_REDUCTIONS}, got {self.kl_reduction!r}")
    if self.first_direction not in DIRECTIONS:
      raise ValueError(f"first_direction must be one of {DIRECTIONS}, got {self.first_direction!r}")
    validate.in_range(self.ema_decay, "ema_decay", 0.0, 1.0, high_open=True)

  def replace(self, **changes: Any) -> "CSBMConfig":
    """A copy with some fields changed (validated)."""
    return dataclasses.replace(self, **changes)

  @property
  def num_chunks(self) -> int:
    """train_steps / steps_per_chunk compiled-scan calls."""
    return self.train_steps // self.steps_per_chunk


@functools.lru_cache(maxsize=None)
def _make_tx(cfg: CSBMConfig) -> optax.GradientTransformation:
  """AdamW (constant lr) for one network; cached so equal configs share jit cache entries."""
  return dls.make_optimizer(cfg, "adamw")


def network(problem: Any, cfg: CSBMConfig) -> SimpleMLP:
  """The SimpleMLP for a problem's (D, S, N) and the config's width / depth."""
  reference = dls.problem_reference(problem)
  return SimpleMLP(
    dim=problem.dim,
    num_categories=reference.num_categories,
    num_times=reference.num_steps + 1,
    hidden=cfg.hidden,
    num_layers=cfg.num_layers,
  )


def _directions(problem: Any) -> dict[str, ReferenceProcess]:
  reference = dls.problem_reference(problem)
  return {"forward": reference, "backward": reversed_reference(reference)}


# --------------------------------------------------------------------------------------------
# State and training step.
# --------------------------------------------------------------------------------------------


def init_state(
  problem: Any, rng: jax.Array, cfg: CSBMConfig, joint_optimizer: bool = False
) -> TrainState:
  """Initial TrainState with params {"forward", "backward"} and their EMA in extras["ema"].

  Args:
    problem: Benchmark or DataProblem.
    rng: PRNG key (typed or raw uint32[2]); traceable.
    cfg: CSBMConfig (or subclass).
    joint_optimizer: one optax state over both networks (alpha-CSBM) instead of one per
      direction (CSBM's alternating training).

  Returns:
    TrainState at step 0 (``tx`` is the per-network / joint AdamW).
  """
  dls.problem_reference(problem)  # raises on an unsupported problem type
  if not isinstance(cfg, CSBMConfig):
    raise ValueError(f"cfg must be a CSBMConfig, got {type(cfg).__name__}")
  net = network(problem, cfg)
  k_init, k_run = jax.random.split(dls._raw_key(rng))
  x = jnp.zeros((1, problem.dim), jnp.int32)
  t = jnp.zeros((1,), jnp.int32)
  params = {
    name: net.init(jax.random.fold_in(k_init, i), x, t)["params"]
    for i, name in enumerate(DIRECTIONS)
  }
  tx = _make_tx(cfg)
  if joint_optimizer:
    opt_state = tx.init(params)
  else:
    opt_state = {name: tx.init(params[name]) for name in DIRECTIONS}
  return TrainState(
    step=jnp.zeros((), jnp.int32),
    params=params,
    opt_state=opt_state,
    rng=k_run,
    extras={"ema": jax.tree.map(jnp.copy, params)},
    tx=tx,
  )


def direction_loss(
  net: SimpleMLP,
  params: Any,
  reference: ReferenceProcess,
  x_start: jax.Array,
  x_end: jax.Array,
  rng: jax.Array,
  cfg: CSBMConfig,
):
  """One direction's bridge-matching loss (``bridge_matching_loss``), t ~ U{0..N} per sample."""
  k_t, k_bridge = jax.random.split(rng)
  t = jax.random.randint(k_t, (x_start.shape[0],), 0, reference.num_steps + 1)
  return bridge_matching_loss(
    lambda x, tt: _apply(net, params, x, tt),
    reference,
    x_start,
    x_end,
    t,
    k_bridge,
    cfg.loss,
    cfg.kl_reduction,
  )


def coupling_start(
  net: SimpleMLP,
  ema_other: Any,
  reference_other: ReferenceProcess,
  rng: jax.Array,
  end_real: jax.Array,
  start_independent: jax.Array,
  imf: jax.Array,
  chunk_elements: int,
) -> jax.Array:
  """Start states of a direction's training pairs: the other direction's EMA model run from the
  real endpoints (IMF phase) or independent draws of the start marginal (first phase)."""
  return jax.lax.cond(
    imf,
    lambda: sample_endpoints(net, ema_other, reference_other, rng, end_real, chunk_elements),
    lambda: start_independent.astype(jnp.int32),
  )


def _select(pred: jax.Array, on_true: Any, on_false: Any) -> Any:
  """Leaf-wise ``where(pred, on_true, on_false)`` over two pytrees of the same structure."""
  return jax.tree.map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)


def trains_forward(step: jax.Array, cfg: CSBMConfig) -> jax.Array:
  """Whether CSBM step ``step`` trains the forward model: epoch e = step // epoch_steps trains
  ``cfg.first_direction`` when e is even, the other direction when e is odd. (B,) or scalar."""
  epoch = jnp.asarray(step) // cfg.epoch_steps
  return (epoch % 2) == (0 if cfg.first_direction == "forward" else 1)


def csbm_train_step(
  state: TrainState, problem: Any, cfg: CSBMConfig
) -> tuple[TrainState, dict[str, jax.Array]]:
  """One CSBM optimiser step; the direction and the coupling phase follow from ``state.step``.

  Epoch e = step // epoch_steps trains the direction of ``trains_forward``; epochs
  e >= 2 num_first_iterations use the IMF couplings (ours can start at epoch 0, the reference's
  no earlier than epoch 2). Only the trained direction's params, AdamW state and EMA change; they
  are selected with ``where`` (both networks have the same shapes), so one loss / rollout graph
  serves both directions.

  Args:
    state: TrainState from ``init_state`` (per-direction optimiser states).
    problem: Benchmark or DataProblem.
    cfg: CSBMConfig (static).

  Returns:
    (new state, metrics ``train/loss``, ``train/grad_norm``, ``train/target_entropy``,
    ``train/forward`` (1 when the forward model was trained), ``train/imf``).
  """
  net = network(problem, cfg)
  refs = _directions(problem)
  epoch = state.step // cfg.epoch_steps
  fwd = trains_forward(state.step, cfg)
  imf = epoch >= 2 * cfg.num_first_iterations
  k_src, k_tgt, k_roll, k_loss = jax.random.split(state.step_key(), 4)
  x0 = dls._draw_source(problem, k_src, cfg.batch_size)
  y = dls._draw_target(problem, k_tgt, cfg.batch_size)
  # Data parallel under the trainer's ``rows_mesh``: the drawn rows, the other direction's
  # rollout from them (the IMF coupling) and the loss are split over ``data``.
  x0, y = shd.shard_rows((x0, y))
  p, o, ema = state.params, state.opt_state, state.extras["ema"]

  # forward: p_0 -> p_1 (start x_0, end y); backward: p_1 -> p_0 (start y, end x_0).
  start = coupling_start(
    net,
    _select(fwd, ema["backward"], ema["forward"]),
    _select(fwd, refs["backward"], refs["forward"]),
    k_roll,
    jnp.where(fwd, y, x0),
    jnp.where(fwd, x0, y),
    imf,
    cfg.chunk_elements,
  )
  start = shd.shard_rows(start)
  params = _select(fwd, p["forward"], p["backward"])
  (loss, info), grads = jax.value_and_grad(direction_loss, argnums=1, has_aux=True)(
    net,
    params,
    _select(fwd, refs["forward"], refs["backward"]),
    start,
    jnp.where(fwd, y, x0),
    k_loss,
    cfg,
  )
  updates, opt = state.tx.update(grads, _select(fwd, o["forward"], o["backward"]), params)
  params = optax.apply_updates(params, updates)
  # torch_ema warm-up (as the reference's EMA) counted per direction: the trained direction has had
  # (epoch // 2) full epochs before this one (the first direction trains even epochs, the other
  # odd ones).
  count = (epoch // 2) * cfg.epoch_steps + state.step % cfg.epoch_steps + 1
  ema_new = core_optim.ema_update(
    _select(fwd, ema["forward"], ema["backward"]), params, cfg.ema_decay, count=count
  )

  def write(tree, new):
    return {
      "forward": _select(fwd, new, tree["forward"]),
      "backward": _select(fwd, tree["backward"], new),
    }

  state = state.replace(
    step=state.step + 1,
    params=write(p, params),
    opt_state=write(o, opt),
    extras={**state.extras, "ema": write(ema, ema_new)},
  )
  return state, {
    "train/loss": loss,
    "train/grad_norm": optax.global_norm(grads),
    **info,
    "train/forward": fwd.astype(jnp.float32),
    "train/imf": imf.astype(jnp.float32),
  }


def train_chunk(state: TrainState, problem: Any, cfg: CSBMConfig, step_fn: StepFn):
  """``cfg.steps_per_chunk`` steps of ``step_fn`` as one ``lax.scan`` (un-jitted)."""
  return jax.lax.scan(
    lambda s, _: step_fn(s, problem, cfg), state, None, length=cfg.steps_per_chunk
  )


_train_chunk = jax.jit(train_chunk, static_argnums=(2, 3), donate_argnums=(0,))


# --------------------------------------------------------------------------------------------
# Output and solver.
# --------------------------------------------------------------------------------------------


@functools.partial(jax.jit, static_argnums=(0, 5))
def _jit_sample(net, params, reference, rng, x0, chunk_elements):
  return sample_endpoints(net, params, reference, rng, x0, chunk_elements)


@functools.partial(jax.jit, static_argnums=(0, 5))
def _jit_transition_logits(net, params, reference, x_t, t, chunk_elements):
  return model_transition_logits(net, params, reference, x_t, t, chunk_elements)


class CSBMOutput(NamedTuple):
  """Result of ``CSBM.solve`` / ``AlphaCSBM.solve``.

  Attributes:
    params: forward-model EMA parameters (the evaluated p_0 -> p_1 model).
    loss: (train_steps,) per-step training loss.
    info: per-step (train_steps,) traces (``train/...``).
    state: the final TrainState (both directions' params, optimiser states and EMAs).
    net: the network definition.
    reference: the forward reference process.
    chunk_elements: chunk bound used by ``sample`` / ``transition_logits``.
  """

  params: Any
  loss: np.ndarray
  info: dict
  state: TrainState
  net: SimpleMLP
  reference: ReferenceProcess
  chunk_elements: int

  def sample(self, rng: jax.Array, x0: jax.Array) -> jax.Array:
    """Forward samples: the full (N+1)-step chain from x0, (B, D) int -> (B, D) int32."""
    x0 = check_states(x0, "x0", self.reference.num_categories, self.net.dim)
    return _jit_sample(self.net, self.params, self.reference, rng, x0, self.chunk_elements)

  def transition_logits(self, x_t: jax.Array, t: Any) -> jax.Array:
    """Forward model transition log-probs of x_{t+1}: x_t (B, D) int, t in [0, N] ->
    (B, D, S); traceable (the ``model_transition_logits`` callable of
    ``metrics.trajectory_kl_forward``)."""
    x_t = check_states(x_t, "x_t", self.reference.num_categories, self.net.dim)
    t = ref_lib.check_time(t, "t", 0, self.reference.num_steps)
    return _jit_transition_logits(
      self.net,
      self.params,
      self.reference,
      x_t.astype(jnp.int32),
      jnp.asarray(t, jnp.int32),
      self.chunk_elements,
    )

  def log_conditionals(self, benchmark: Any, max_states: int = 4096) -> jax.Array:
    """Exact (S^D, S^D) table log pi_theta(y | x_0) by enumeration (tiny instances), in the
    order of ``metrics.enumerate_states`` (``metrics.exact_plan_from_transition_logits``)."""
    return dsb_metrics.exact_plan_from_transition_logits(
      benchmark, self.transition_logits, max_states=max_states
    )


def make_output(
  state: TrainState, problem: Any, cfg: CSBMConfig, traces: dict[str, np.ndarray] | None = None
) -> CSBMOutput:
  """Wraps a CSBM-type TrainState (forward EMA params) as a ``CSBMOutput``."""
  traces = {} if traces is None else traces
  return CSBMOutput(
    params=state.extras["ema"]["forward"],
    loss=traces.get("train/loss", np.zeros((0,), np.float32)),
    info=traces,
    state=state,
    net=network(problem, cfg),
    reference=dls.problem_reference(problem),
    chunk_elements=cfg.chunk_elements,
  )


def solve_with(
  problem: Any, rng: jax.Array, cfg: CSBMConfig, step_fn: StepFn, joint_optimizer: bool
) -> CSBMOutput:
  """Initialises, runs ``cfg.num_chunks`` compiled chunks of ``step_fn`` and wraps the result."""
  state = init_state(problem, rng, cfg, joint_optimizer)
  state, traces = run_chunks(
    lambda s, _: _train_chunk(s, problem, cfg, step_fn),
    state,
    cfg.num_chunks,
    steps_per_chunk=cfg.steps_per_chunk,
    name=type(cfg).__name__.removesuffix("Config"),
  )
  return make_output(state, problem, cfg, traces)


class CSBM:
  """CSBM solver (alternating D-IMF): configure once, then ``solve(problem, rng)``.

  Usage (a sketch, not a doctest)::

    solver = CSBM(CSBMConfig(train_steps=4000, epoch_steps=500, num_first_iterations=1,
                             steps_per_chunk=500, learning_rate=1e-3))
    out = solver.solve(benchmark, jax.random.key(0))
    y = out.sample(jax.random.key(1), x0)
  """

  # (state, problem, config) -> (state, metrics): one training step, as run inside the
  # compiled scan and by ``dsb.method.DSBMethod``.
  step_fn = staticmethod(csbm_train_step)
  joint_optimizer = False
  config_class = CSBMConfig

  def __init__(self, config: CSBMConfig | None = None, **overrides: Any):
    """Args: config (default the class's config); overrides: fields to replace."""
    config = self.config_class() if config is None else config
    if not isinstance(config, self.config_class):
      raise ValueError(
        f"config must be a {self.config_class.__name__}, got {type(config).__name__}"
      )
    self.config = config.replace(**overrides) if overrides else config

  def init_state(self, problem: Any, rng: jax.Array) -> TrainState:
    """The initial TrainState for ``problem``."""
    return init_state(problem, rng, self.config, self.joint_optimizer)

  def solve(self, problem: Any, rng: jax.Array) -> CSBMOutput:
    """Trains both directions on ``problem``.

    Args:
      problem: a Benchmark (fresh draws every step) or a DataProblem (resampled arrays).
      rng: PRNG key.

    Returns:
      CSBMOutput(params = forward EMA params, loss (train_steps,), info, state, ...).
    """
    return solve_with(problem, rng, self.config, self.step_fn, self.joint_optimizer)
