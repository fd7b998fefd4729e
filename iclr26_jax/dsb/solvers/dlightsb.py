"""DLightSB: the discrete LightSB solver with a CP (mixture-of-products) Schrödinger potential.

The learned potential theta = (log a (K,), log r (D, S, K)) is a ``CPPotential`` like the truth's
(Eq. 4), so every closed form of ``dsb.benchmark`` applies to it. Training minimises the unpaired
objective E_{p_0} log c_theta(x_0) - E_{p_1} log v_theta(y) (Eq. 12; KL(pi* || pi_theta) up to a
constant), optionally minus a decaying mixture-entropy bonus. Holds ``DLightSB`` with its config
and output, ``DataProblem``, ``dlightsb_loss`` and the training driver shared with DLightSB-M.

Paper: X. Aramayo Carrasco, G. Ksenofontov, A. Leonov, I. Koshelev, A. Korotin, "Entering the Era
of Discrete Diffusion Models: A Benchmark for Schrödinger Bridges and Entropic Optimal Transport",
ICLR 2026 (arXiv 2509.23348), §"DLightSB"; reference PyTorch code github.com/gregkseno/catsbench.
Background: LightSB (Korotin et al., ICLR 2024). The algorithm, with its equations and reference
hyperparameters: docs/methods/dsb.md ("The algorithm").
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from iclr26_jax.core import optim as core_optim
from iclr26_jax.core import sharding as shd
from iclr26_jax.core import validate
from iclr26_jax.core.loop import run_chunks
from iclr26_jax.core.train_state import TrainState
from iclr26_jax.dsb import benchmark as bm
from iclr26_jax.dsb.benchmark import Benchmark, CPPotential
from iclr26_jax.dsb.reference import ReferenceProcess, check_states

__all__ = [
  "INIT_KINDS",
  "DataProblem",
  "DLightSBConfig",
  "DLightSBOutput",
  "DLightSB",
  "init_potential",
  "init_state",
  "train_chunk",
  "train_step",
  "run_training",
  "dlightsb_loss",
  "problem_reference",
]

INIT_KINDS = ("samples", "uniform", "gaussian")
_OPTIMIZERS = ("adamw", "adam")


# --------------------------------------------------------------------------------------------
# Problems.
# --------------------------------------------------------------------------------------------


class DataProblem(struct.PyTreeNode):
  """A finite-sample problem: a reference process and sample arrays of both marginals.

  DLightSB draws x_0 and y independently (with replacement) from ``x0`` and ``x1``; DLightSB-M
  treats row i of ``x0`` and row i of ``x1`` as a coupled pair (x_0, x_{N+1}) and then needs
  n0 == n1.

  Attributes:
    reference: the reference process (S categories, N intermediate steps).
    x0: (n0, D) int32 source samples in [0, S).
    x1: (n1, D) int32 target samples in [0, S).
  """

  reference: ReferenceProcess
  x0: jax.Array
  x1: jax.Array

  @classmethod
  def create(cls, reference: ReferenceProcess, x0: Any, x1: Any) -> "DataProblem":
    """Validates and builds a DataProblem (shapes (n0, D) and (n1, D), same D)."""
    if not isinstance(reference, ReferenceProcess):
      raise ValueError(f"reference must be a ReferenceProcess, got {type(reference).__name__}")
    s = reference.num_categories
    x0 = check_states(x0, "x0", s).astype(jnp.int32)
    x1 = check_states(x1, "x1", s, x0.shape[1]).astype(jnp.int32)
    if x0.shape[0] == 0 or x1.shape[0] == 0:
      raise ValueError(
        f"x0 and x1 must hold at least one sample, got shapes "
        f"{tuple(x0.shape)} and {tuple(x1.shape)}"
      )
    return cls(reference=reference, x0=x0, x1=x1)

  @property
  def dim(self) -> int:
    """D."""
    return self.x0.shape[1]

  @property
  def num_categories(self) -> int:
    """S."""
    return self.reference.num_categories


def problem_reference(problem: Any) -> ReferenceProcess:
  """The reference process of a ``Benchmark`` or ``DataProblem``."""
  if isinstance(problem, (Benchmark, DataProblem)):
    return problem.reference
  raise ValueError(f"problem must be a Benchmark or a DataProblem, got {type(problem).__name__}")


def _draw_source(problem: Any, key: jax.Array, n: int) -> jax.Array:
  """(n, D) int32 x_0 ~ p_0 (fresh benchmark draw or resampled data)."""
  if isinstance(problem, Benchmark):
    return problem.sample_source(key, n)
  idx = jax.random.randint(key, (n,), 0, problem.x0.shape[0])
  return problem.x0[idx]


def _draw_target(problem: Any, key: jax.Array, n: int) -> jax.Array:
  """(n, D) int32 y ~ p_1, independent of any source draw."""
  if isinstance(problem, Benchmark):
    return problem.sample_target(key, n)
  idx = jax.random.randint(key, (n,), 0, problem.x1.shape[0])
  return problem.x1[idx]


def _categorical_flat(key: jax.Array, logits: jax.Array) -> jax.Array:
  """Gumbel-max draw over the last axis with a flat (rank-1) noise draw.

  Rank >= 3 ``jax.random`` draws compile slowly on CPU with partitionable threefry, so the noise
  is drawn flat and reshaped. logits (..., S) -> (...) int32.
  """
  noise = jax.random.gumbel(key, (logits.size,), logits.dtype).reshape(logits.shape)
  return jnp.argmax(logits + noise, axis=-1).astype(jnp.int32)


# --------------------------------------------------------------------------------------------
# Configuration.
# --------------------------------------------------------------------------------------------


def check_training_fields(cfg: Any) -> None:
  """Validates the fields every solver config shares (steps, chunking, batch, optimiser).

  Raises ValueError naming the first bad field.
  """
  validate.positive_int(cfg.train_steps, "train_steps", 1)
  validate.positive_int(cfg.steps_per_chunk, "steps_per_chunk", 1)
  if cfg.train_steps % cfg.steps_per_chunk:
    raise ValueError(
      f"steps_per_chunk must divide train_steps (one compiled scan length), "
      f"got train_steps={cfg.train_steps}, "
      f"steps_per_chunk={cfg.steps_per_chunk}"
    )
  validate.positive_int(cfg.batch_size, "batch_size", 1)
  validate.in_range(cfg.learning_rate, "learning_rate", 0.0, low_open=True)
  validate.in_range(cfg.b1, "b1", 0.0, 1.0, high_open=True)
  validate.in_range(cfg.b2, "b2", 0.0, 1.0, high_open=True)
  validate.in_range(cfg.weight_decay, "weight_decay", 0.0)
  validate.in_range(cfg.grad_clip, "grad_clip", 0.0)
  validate.positive_int(cfg.chunk_elements, "chunk_elements", 1)


@dataclasses.dataclass(frozen=True)
class DLightSBConfig:
  """Hyperparameters of DLightSB (defaults: the paper's HD settings); frozen and hashable.

  Attributes:
    num_potentials: K, mixture components of the learned potential (1000 in the paper's HD runs).
    train_steps: total optimiser steps (paper: 100k).
    steps_per_chunk: steps per compiled ``lax.scan`` call; must divide ``train_steps``.
    batch_size: B, samples of each marginal per step (128 HD, 32 images).
    init: "samples" (component k puts ``init_mass`` on the categories of a p_0 sample),
      "uniform" (all log r = -log(S K)) or "gaussian" (log r ~ N(0, 1)).
    init_mass: probability of the sample's category under "samples" init, in (0, 1).
    log_alpha_mean: mean of the N(mean, std^2) initial log a_k (paper: -2).
    log_alpha_std: its standard deviation (paper: 0.1).
    optimizer: "adamw" (paper) or "adam".
    learning_rate: peak learning rate (paper: 1e-2), constant schedule.
    b1: Adam beta1 (paper: 0.95).
    b2: Adam beta2 (paper: 0.99).
    weight_decay: AdamW decoupled weight decay on the log-parameters (paper: PyTorch's 0.01);
      ignored by "adam".
    grad_clip: global-norm clipping, 0 disables.
    entropy_weight: lambda of the mixture-entropy bonus (paper: 0; 10 with K = 64).
    entropy_decay_steps: lambda_t decays linearly from lambda to 0 over this many steps.
    chunk_elements: bound on the intermediates of the log-sum-exp contractions.
    lse_impl: the log-sum-exp table contraction (``benchmark.log_u_table``): "auto" (default;
      the max-shifted matmul for K >= 16, the broadcast form below), "matmul" or "broadcast"
      (D S^2 K exponentials per step).
  """

  num_potentials: int = 1000
  train_steps: int = 100_000
  steps_per_chunk: int = 1000
  batch_size: int = 128
  init: str = "samples"
  init_mass: float = 0.9
  log_alpha_mean: float = -2.0
  log_alpha_std: float = 0.1
  optimizer: str = "adamw"
  learning_rate: float = 1e-2
  b1: float = 0.95
  b2: float = 0.99
  weight_decay: float = 0.01
  grad_clip: float = 0.0
  entropy_weight: float = 0.0
  entropy_decay_steps: int = 20_000
  chunk_elements: int = bm.DEFAULT_CHUNK_ELEMENTS
  lse_impl: str = "auto"

  def __post_init__(self):
    self.validate()

  def validate(self) -> None:
    """Raises ValueError naming the first bad field."""
    validate.positive_int(self.num_potentials, "num_potentials", 1)
    if self.lse_impl not in bm.LSE_IMPLS:
      raise ValueError(f"lse_impl must be one of {bm.LSE_IMPLS}, got {self.lse_impl!r}")
    check_training_fields(self)
    if self.init not in INIT_KINDS:
      raise ValueError(f"init must be one of {INIT_KINDS}, got {self.init!r}")
    validate.in_range(self.init_mass, "init_mass", 0.0, 1.0, low_open=True, high_open=True)
    validate.in_range(self.log_alpha_mean, "log_alpha_mean", -math.inf, math.inf, True, True)
    validate.in_range(self.log_alpha_std, "log_alpha_std", 0.0)
    if self.optimizer not in _OPTIMIZERS:
      raise ValueError(f"optimizer must be one of {_OPTIMIZERS}, got {self.optimizer!r}")
    validate.in_range(self.entropy_weight, "entropy_weight", 0.0)
    validate.positive_int(self.entropy_decay_steps, "entropy_decay_steps", 1)

  def replace(self, **changes: Any) -> "DLightSBConfig":
    """A copy with some fields changed (validated)."""
    return dataclasses.replace(self, **changes)

  @property
  def num_chunks(self) -> int:
    """train_steps / steps_per_chunk compiled-scan calls."""
    return self.train_steps // self.steps_per_chunk


@functools.lru_cache(maxsize=None)
def _make_tx(cfg: DLightSBConfig):
  """The optax chain for a config (cached so equal configs share one jit cache entry)."""
  return make_optimizer(cfg, cfg.optimizer)


def make_optimizer(cfg: Any, name: str):
  """``core.optim.make_optimizer`` (constant schedule) with a solver config's lr, betas, weight
  decay and clipping, for the optimiser ``name``."""
  ocfg = core_optim.optim_defaults()
  ocfg.name = name
  ocfg.learning_rate = float(cfg.learning_rate)
  ocfg.b1 = float(cfg.b1)
  ocfg.b2 = float(cfg.b2)
  ocfg.weight_decay = float(cfg.weight_decay)
  ocfg.grad_clip = float(cfg.grad_clip)
  return core_optim.make_optimizer(ocfg, cfg.train_steps)


# --------------------------------------------------------------------------------------------
# Initialisation and loss.
# --------------------------------------------------------------------------------------------


def init_potential(problem: Any, rng: jax.Array, cfg: DLightSBConfig) -> CPPotential:
  """Initial learned potential (the paper's DLightSB initialisation options).

  Args:
    problem: Benchmark or DataProblem (gives S, D and, for "samples", the p_0 draws).
    rng: PRNG key.
    cfg: the solver config.

  Returns:
    CPPotential with log_alpha (K,) ~ N(log_alpha_mean, log_alpha_std^2) and log_cp_cores
    (D, S, K): "samples" puts log(init_mass) on the category of the k-th p_0 sample in every
    coordinate and log((1 - init_mass)/(S - 1)) elsewhere; "uniform" is -log(S K) everywhere;
    "gaussian" draws N(0, 1).
  """
  reference = problem_reference(problem)
  s = reference.num_categories
  d = problem.dim
  k = cfg.num_potentials
  dtype = reference.log_q_step.dtype
  k_alpha, k_cores = jax.random.split(rng)
  log_alpha = cfg.log_alpha_mean + cfg.log_alpha_std * jax.random.normal(k_alpha, (k,), dtype)
  if cfg.init == "samples":
    anchors = _draw_source(problem, k_cores, k)  # (K, D)
    hit = anchors.T[:, None, :] == jnp.arange(s)[None, :, None]  # (D, S, K)
    on = math.log(cfg.init_mass)
    off = math.log((1.0 - cfg.init_mass) / (s - 1))
    cores = jnp.where(hit, jnp.asarray(on, dtype), jnp.asarray(off, dtype))
  elif cfg.init == "uniform":
    cores = jnp.full((d, s, k), -math.log(s * k), dtype)
  else:
    cores = jax.random.normal(k_cores, (d * s * k,), dtype).reshape(d, s, k)
  return CPPotential(log_alpha=log_alpha, log_cp_cores=cores)


def dlightsb_loss(
  potential: CPPotential,
  reference: ReferenceProcess,
  x0: jax.Array,
  y: jax.Array,
  entropy_weight: Any = 0.0,
  chunk_elements: int = bm.DEFAULT_CHUNK_ELEMENTS,
  lse_impl: str = "auto",
) -> tuple[jax.Array, dict[str, jax.Array]]:
  """The DLightSB objective on one batch of unpaired samples.

  loss = mean_b log c_theta(x0_b) - mean_b log v_theta(y_b) - entropy_weight * mean_b H_b, where
  H_b is the entropy of the plan's mixture weights w(x0_b) (Eq. 7).

  Args:
    potential: learned CPPotential, log_alpha (K,), log_cp_cores (D, S, K).
    reference: the reference process (S categories).
    x0: (B0, D) int source samples.
    y: (B1, D) int target samples (independent of x0).
    entropy_weight: scalar lambda_t >= 0 (may be traced).
    chunk_elements: bound on the table contraction's intermediates.
    lse_impl: the table contraction, "auto" | "matmul" | "broadcast" (``benchmark.log_u_table``).

  Returns:
    (loss scalar, info) with info keys ``train/log_c_mean``, ``train/log_v_mean``,
    ``train/mixture_entropy``.
  """
  bm.check_potential(potential, reference)
  d = potential.dim
  x0 = check_states(x0, "x0", potential.num_categories, d)
  y = check_states(y, "y", potential.num_categories, d)
  table = bm.log_u_table(reference.log_kernel(), potential.log_cp_cores, chunk_elements, lse_impl)
  logits = potential.log_alpha + table[jnp.arange(d)[None, :], x0].sum(1)  # (B0, K)
  log_c = jax.nn.logsumexp(logits, axis=-1)
  log_w = logits - log_c[:, None]
  entropy = -jnp.sum(jnp.exp(log_w) * log_w, axis=-1)
  log_v = bm.log_potential(potential, y, chunk_elements)
  loss = log_c.mean() - log_v.mean() - entropy_weight * entropy.mean()
  return loss, {
    "train/log_c_mean": log_c.mean(),
    "train/log_v_mean": log_v.mean(),
    "train/mixture_entropy": entropy.mean(),
  }


# --------------------------------------------------------------------------------------------
# The shared staged training driver (also used by DLightSB-M).
# --------------------------------------------------------------------------------------------

# loss_fn(params, problem, key, step, cfg) -> (loss, info)
LossFn = Callable[[CPPotential, Any, jax.Array, jax.Array, Any], tuple[jax.Array, dict]]


def train_chunk(state: TrainState, problem: Any, cfg: Any, loss_fn: LossFn):
  """``cfg.steps_per_chunk`` optimiser steps as one ``lax.scan`` (un-jitted; see ``_train_chunk``).

  Args:
    state: TrainState whose params are a CPPotential.
    problem: Benchmark or DataProblem.
    cfg: the solver config (static).
    loss_fn: (params, problem, key, step, cfg) -> (loss, info) (static).

  Returns:
    (new state, info) with info values of shape (cfg.steps_per_chunk,).
  """

  def step(state, _):
    return train_step(state, problem, cfg, loss_fn)

  return jax.lax.scan(step, state, None, length=cfg.steps_per_chunk)


def train_step(
  state: TrainState, problem: Any, cfg: Any, loss_fn: LossFn
) -> tuple[TrainState, dict[str, jax.Array]]:
  """One optimiser step (the body of ``train_chunk``; also ``dsb.method.DSBMethod.update``).

  The step key is ``state.step_key()`` (root key folded with the step), so the step is a pure
  function of the state and a resumed run reproduces the uninterrupted one.

  Args:
    state: TrainState whose params are a CPPotential.
    problem: Benchmark or DataProblem.
    cfg: the solver config (static).
    loss_fn: (params, problem, key, step, cfg) -> (loss, info).

  Returns:
    (new state, scalar metrics ``train/loss``, ``train/grad_norm`` and the loss's info).
  """
  key = state.step_key()
  (loss, info), grads = jax.value_and_grad(loss_fn, has_aux=True)(
    state.params, problem, key, state.step, cfg
  )
  state, gnorm = state.apply_gradients(grads)
  return state, {"train/loss": loss, "train/grad_norm": gnorm, **info}


# Compiled once per (config, loss_fn, problem structure); the state buffers are donated.
_train_chunk = jax.jit(train_chunk, static_argnums=(2, 3), donate_argnums=(0,))


def _raw_key(rng: Any) -> jax.Array:
  rng = jnp.asarray(rng) if not isinstance(rng, jax.Array) else rng
  if jnp.issubdtype(rng.dtype, jax.dtypes.prng_key):
    if rng.ndim != 0:
      raise ValueError(f"rng must be a single PRNG key, got shape {tuple(rng.shape)}")
    return jax.random.key_data(rng)
  if rng.dtype == jnp.uint32 and rng.shape == (2,):
    return rng
  raise ValueError(
    f"rng must be a PRNG key (jax.random.key or PRNGKey), got dtype {rng.dtype} "
    f"shape {tuple(rng.shape)}"
  )


def _check_problem(problem: Any, cfg: Any) -> None:
  problem_reference(problem)  # raises on an unsupported problem type
  if not isinstance(cfg, DLightSBConfig):
    raise ValueError(f"cfg must be a DLightSBConfig, got {type(cfg).__name__}")


def init_state(problem: Any, rng: jax.Array, cfg: Any) -> TrainState:
  """Initial TrainState: ``init_potential`` params, the config's optax chain, the root key.

  Args:
    problem: Benchmark or DataProblem.
    rng: PRNG key (typed or raw uint32[2]).
    cfg: DLightSBConfig (or subclass).

  Returns:
    TrainState at step 0.
  """
  _check_problem(problem, cfg)
  k_init, k_run = jax.random.split(_raw_key(rng))
  return TrainState.create(params=init_potential(problem, k_init, cfg), tx=_make_tx(cfg), rng=k_run)


def run_training(
  problem: Any, rng: jax.Array, cfg: Any, loss_fn: LossFn
) -> tuple[TrainState, dict[str, np.ndarray]]:
  """Initialises the potential and runs ``cfg.num_chunks`` compiled scan chunks.

  Args:
    problem: Benchmark or DataProblem.
    rng: PRNG key (typed or raw uint32[2]).
    cfg: DLightSBConfig (or subclass); static.
    loss_fn: (params, problem, key, step, cfg) -> (loss, info); a module-level function so the
      compiled chunk is cached across calls.

  Returns:
    The final TrainState and per-step traces, each a (train_steps,) numpy array.

  Raises:
    FloatingPointError: the loss became non-finite (``core.loop.NonFiniteLossError``, naming
      the first bad step).
  """
  state = init_state(problem, rng, cfg)
  return run_chunks(
    lambda s, _: _train_chunk(s, problem, cfg, loss_fn),
    state,
    cfg.num_chunks,
    steps_per_chunk=cfg.steps_per_chunk,
    name=type(cfg).__name__.removesuffix("Config"),
  )


# --------------------------------------------------------------------------------------------
# The solver.
# --------------------------------------------------------------------------------------------


class DLightSBOutput(NamedTuple):
  """Result of ``DLightSB.solve``.

  Attributes:
    potential: learned CPPotential, log_alpha (K,), log_cp_cores (D, S, K); plug it into the
      ``benchmark`` closed forms (``plan_log_prob``, ``sample_plan``, ``sample_markov``,
      ``transition_marginal_log_probs``) together with the problem's reference.
    loss: (train_steps,) per-step training loss.
    info: per-step (train_steps,) traces: ``train/loss``, ``train/grad_norm`` and the loss's
      namespaced diagnostics.
    state: the final TrainState (params, optimiser state, step, root key).
  """

  potential: CPPotential
  loss: np.ndarray
  info: dict
  state: TrainState


def _dlightsb_step_loss(
  params: CPPotential, problem: Any, key: jax.Array, step: jax.Array, cfg: DLightSBConfig
):
  k0, k1 = jax.random.split(key)
  x0 = _draw_source(problem, k0, cfg.batch_size)
  y = _draw_target(problem, k1, cfg.batch_size)
  # Data parallel under the trainer's ``rows_mesh``: the drawn rows are split over ``data``.
  x0, y = shd.shard_rows((x0, y))
  frac = jnp.clip(1.0 - step.astype(jnp.float32) / cfg.entropy_decay_steps, 0.0, 1.0)
  return dlightsb_loss(
    params,
    problem_reference(problem),
    x0,
    y,
    cfg.entropy_weight * frac,
    cfg.chunk_elements,
    cfg.lse_impl,
  )


class DLightSB:
  """Discrete LightSB solver: configure once, then ``solve(problem, rng)``.

  Example:
    solver = DLightSB(DLightSBConfig(num_potentials=8, train_steps=400, steps_per_chunk=200))
    out = solver.solve(benchmark, jax.random.key(0))
    y = bm.sample_plan(out.potential, benchmark.reference, key, x0)
  """

  # (params, problem, key, step, config) -> (loss, info): one training step's loss, as run
  # inside the compiled scan (public so benchmarks can time the exact training step).
  loss_fn = staticmethod(_dlightsb_step_loss)

  def __init__(self, config: DLightSBConfig | None = None, **overrides: Any):
    """Args: config (default DLightSBConfig()); overrides: fields to replace."""
    config = DLightSBConfig() if config is None else config
    if not isinstance(config, DLightSBConfig):
      raise ValueError(f"config must be a DLightSBConfig, got {type(config).__name__}")
    self.config = config.replace(**overrides) if overrides else config

  def solve(self, problem: Any, rng: jax.Array) -> DLightSBOutput:
    """Trains the CP potential on unpaired samples of (p_0, p_1).

    Args:
      problem: a Benchmark (fresh draws every step) or a DataProblem (resampled arrays).
      rng: PRNG key.

    Returns:
      DLightSBOutput(potential, loss (train_steps,), info, state).
    """
    state, traces = run_training(problem, rng, self.config, self.loss_fn)
    return DLightSBOutput(
      potential=state.params, loss=traces["train/loss"], info=traces, state=state
    )
