"""The DSB solvers through the shared trainer (``python -m experiments.main``).

``DSBMethod`` trains any trained solver of ``evaluation.SOLVERS`` on a CatSBench instance.
``update`` is the solver's own training step, the function its ``solve()`` scans, so the trainer
adds checkpoint / resume, metrics JSONL and the NaN guard without a second copy of the step. The
data are drawn inside the step with the step key (``get_batch`` returns an empty batch), and CSBM's
direction and coupling phase are functions of ``state.step`` with the other direction's EMA
parameters in ``state.extras["ema"]``, so a resumed run is exact. ``default_config`` /
``variants`` build the run config, ``solver_config`` the solver dataclass; ``evaluate`` logs
``evaluation.evaluate_model``'s metrics as ``eval/<name>``.
The config fields and logged metrics: docs/methods/dsb.md ("Configuration and logged metrics").
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import ml_collections

from iclr26_jax.core import config as config_lib
from iclr26_jax.core import optim as core_optim
from iclr26_jax.core.trainer import Method
from iclr26_jax.dsb import benchmark as bm
from iclr26_jax.dsb import metrics as dsb_metrics
from iclr26_jax.dsb import evaluation
from iclr26_jax.dsb.solvers import csbm
from iclr26_jax.dsb.solvers import dlightsb as dls
from iclr26_jax.dsb.solvers.csbm import CSBM

__all__ = [
  "SOLVERS",
  "TINY",
  "PRESET_NAMES",
  "DEFAULT_PRESET",
  "ONE_PRESET",
  "OPTIM_FIELDS",
  "default_config",
  "preset_variant",
  "smoke",
  "variants",
  "optim_config",
  "solver_config",
  "DSBMethod",
  "make_benchmark",
]

SOLVERS = {name: entry for name, entry in evaluation.SOLVERS.items() if entry.trained}
"""The trained rows of ``evaluation.SOLVERS`` (the one solver table)."""
_TRAINER_OWNED = ("train_steps", "steps_per_chunk", "batch_size")
OPTIM_FIELDS = {
  "name": "optimizer",
  "learning_rate": "learning_rate",
  "b1": "b1",
  "b2": "b2",
  "weight_decay": "weight_decay",
  "grad_clip": "grad_clip",
}
"""``config.optim`` key -> solver dataclass field (``name`` only where the dataclass has an
``optimizer`` field: DLightSB-type; CSBM-type solvers always use AdamW)."""

TINY = "tiny_d2_s10_uniform"  # the ``tiny`` variant (``benchmark.TINY_PRESETS``)
PRESET_NAMES = tuple(sorted(bm.HD_PRESETS)) + tuple(sorted(bm.TINY_PRESETS)) + ("tiny",)
_BENCH_FIELDS = (
  "dim",
  "num_categories",
  "reference",
  "alpha",
  "num_steps",
  "num_skip_steps",
  "num_potentials",
  "potential",
  "bump_sigma",
  "source",
  "source_range",
)


def _preset_fields(name: str) -> dict[str, Any]:
  fields = bm.PRESETS[TINY if name == "tiny" else name]
  return {k: fields[k] for k in _BENCH_FIELDS}


def _solver_fields(entry) -> tuple[type, dict[str, str]]:
  """The entry's dataclass and the ``optim`` keys it reads (key -> dataclass field)."""
  names = {f.name for f in dataclasses.fields(entry.config_cls)}
  return entry.config_cls, {k: f for k, f in OPTIM_FIELDS.items() if f in names}


def optim_config(solver: str) -> ml_collections.ConfigDict:
  """``core.optim.optim_defaults()`` with ``solver``'s paper values (from its dataclass
  defaults: AdamW, constant schedule, lr / betas / weight decay / clip of the dataclass)."""
  entry = SOLVERS[solver]
  cfg_cls, fields = _solver_fields(entry)
  defaults = cfg_cls(**(entry.fixed or {}))
  o = core_optim.optim_defaults()
  o.name = "adamw"  # CSBM-type: always AdamW (``csbm._make_tx``)
  for key, field in fields.items():
    o[key] = getattr(defaults, field)
  return o


def default_config(
  solver: str, preset: str = "hd_d16_s50_prior_gaussian_a0.02"
) -> ml_collections.ConfigDict:
  """The unlocked default config of ``solver`` on ``preset`` (paper hyperparameters)."""
  if solver not in SOLVERS:
    raise config_lib.ConfigError(
      f"config key 'solver' must be one of {sorted(SOLVERS)}; got {solver!r}"
    )
  entry = SOLVERS[solver]
  cfg_cls, steps = entry.config_cls, entry.paper_steps
  c = config_lib.trainer_defaults()
  c.method = "dsb"
  c.solver = solver  # dlightsb | dlightsb_m | dlightsb_m_joint | csbm | alpha_csbm
  c.seed = 5  # the reference scripts train with seed 5
  c.num_steps = steps  # = the solver's train_steps
  c.batch_size = 128  # = the solver's batch_size (alpha-CSBM: two halves)
  c.log_every = 1000
  c.eval_every = 20_000
  c.checkpoint_every = 10_000
  b = c.benchmark = ml_collections.ConfigDict()
  b.preset = preset  # label: one of PRESET_NAMES (fields below may be overridden)
  b.seed = 0  # instance seed (our instances differ from the released files)
  for key, value in _preset_fields(preset).items():
    b[key] = value  # dim, num_categories, reference, alpha, num_steps, ...
  c.optim = optim_config(solver)  # the solver's optimiser, paper values (see the docstring)
  # The solver dataclass's other fields (documented there), paper defaults.
  defaults = cfg_cls(**(entry.fixed or {}))
  c.hparams = ml_collections.ConfigDict(
    {
      f.name: getattr(defaults, f.name)
      for f in dataclasses.fields(cfg_cls)
      if f.name not in _TRAINER_OWNED and f.name not in OPTIM_FIELDS.values()
    }
  )
  e = c.eval = ml_collections.ConfigDict()
  e.seed = 2  # the reference scripts test with seed 2
  e.num_test = 20_000  # test sources (shape, perplexity; conditioning points)
  e.point_every = 128  # one conditioning point per evaluation batch of 128
  e.cond_samples = 1000  # conditional samples per point, truth and model
  e.cond_trend = True  # also cond trend ((D S)^2 pair histograms per point)
  e.traj_samples = 1024  # sources of the forward trajectory KL
  e.exact_max_states = 256  # exact KL / TV by enumeration when S^D <= this
  return c


DEFAULT_PRESET = "hd_d16_s50_prior_gaussian_a0.02"  # the instance when no preset is named
ONE_PRESET = {"presets": PRESET_NAMES}
"""``config_lib.experiment(..., one_of=ONE_PRESET)``: a config names at most one instance."""


def preset_variant(name: str) -> dict[str, Any]:
  """The variant ``name`` (a preset of ``PRESET_NAMES``) as dotted-key overrides: its label and
  its ``benchmark`` fields."""
  return {
    "benchmark.preset": name,
    **{f"benchmark.{k}": v for k, v in _preset_fields(name).items()},
  }


def smoke(c: ml_collections.ConfigDict) -> None:
  """The ``smoke`` variant: the ``tiny`` instance (a preset named with ``smoke`` replaces it:
  ``variants`` applies presets after ``smoke``), 20 steps of batch 32, a small evaluation and
  model (DLightSB-type: K = 16; CSBM-type: width 32, epochs of 5 steps, 1 warm-up cycle)."""
  fields = {
    **preset_variant("tiny"),
    "batch_size": 32,
    "eval.num_test": 64,
    "eval.point_every": 32,
    "eval.cond_samples": 64,
    "eval.traj_samples": 32,
  }
  if c.solver.startswith("dlightsb"):
    fields["hparams.num_potentials"] = 16
  else:
    fields.update(
      {"hparams.hidden": 32, "hparams.epoch_steps": 5, "hparams.num_first_iterations": 1}
    )
  config_lib.apply_smoke(c, **fields)


def variants() -> dict[str, Any]:
  """The variants of every ``experiments/configs/dsb/<solver>.py``, for ``config_lib.experiment``
  (with ``one_of=ONE_PRESET`` and ``validate=solver_config``): ``smoke``, then at most one instance
  of ``PRESET_NAMES``, the 12 HD presets (default ``DEFAULT_PRESET``; S = 50, N = 15, s = 8) or a
  tiny enumerable one (``tiny`` = ``tiny_d2_s10_uniform``; exact KL / TV are logged). The keys a
  run may override: docs/methods/dsb.md ("Configuration and logged metrics").
  """
  return {"smoke": smoke, **{name: preset_variant(name) for name in PRESET_NAMES}}


def make_benchmark(cfg: ml_collections.ConfigDict) -> bm.Benchmark:
  """The Benchmark of ``cfg.benchmark`` (generated from its seed)."""
  b = cfg.benchmark
  try:
    return bm.make_benchmark(
      int(b.dim),
      int(b.num_categories),
      b.reference,
      float(b.alpha),
      int(b.num_steps),
      int(b.num_skip_steps),
      int(b.num_potentials),
      seed=int(b.seed),
      source=b.source,
      potential=b.potential,
      bump_sigma=float(b.bump_sigma),
      source_range=float(b.source_range),
    )
  except ValueError as e:
    raise config_lib.ConfigError(f"config key 'benchmark': {e}") from None


def solver_config(cfg: ml_collections.ConfigDict):
  """The solver dataclass from the run config, the one place it is built: ``cfg.optim`` mapped
  onto the dataclass's optimiser fields (``OPTIM_FIELDS``), ``cfg.hparams`` for the rest, the
  trainer's ``num_steps`` and ``batch_size`` (one step per call).

  Raises:
    ConfigError: naming the key (``optim.*``, ``hparams``) of a value the solver rejects, or an
      ``optim`` key the solver does not read set away from its value.
  """
  if cfg.solver not in SOLVERS:
    raise config_lib.ConfigError(
      f"config key 'solver' must be one of {sorted(SOLVERS)}; got {cfg.solver!r}"
    )
  entry = SOLVERS[cfg.solver]
  cfg_cls, fields = _solver_fields(entry)
  optim = config_lib.optim_fields(
    cfg.optim, fields, optim_config(cfg.solver), f"the {cfg.solver} optimiser"
  )
  return config_lib.to_dataclass(
    cfg_cls,
    cfg.hparams,
    "hparams",
    keys={f: f"optim.{k}" for k, f in fields.items()},
    train_steps=int(cfg.num_steps),
    steps_per_chunk=1,
    batch_size=int(cfg.batch_size),
    **{**optim, **(entry.fixed or {})},
  )


class DSBMethod(Method):
  """Any DSB solver through ``core.trainer.train``; see the module docstring."""

  name = "dsb"

  def __init__(self, config: ml_collections.ConfigDict):
    super().__init__(config)
    self.problem = make_benchmark(config)
    self.solver_cfg = solver_config(config)
    self.entry = SOLVERS[config.solver]
    self.solver = self.entry.solver_cls(self.solver_cfg)
    self.csbm_type = isinstance(self.solver, CSBM)
    e = config.eval
    for key in ("num_test", "point_every", "cond_samples", "traj_samples"):
      if int(e[key]) < 1:
        raise config_lib.ConfigError(f"config key 'eval.{key}' must be >= 1; got {e[key]}")
    num_test, every = int(e.num_test), int(e.point_every)
    s, d = self.problem.num_categories, self.problem.dim
    max_states = int(e.exact_max_states)
    self.eval_ctx = evaluation.prepare_preset(
      self.problem,
      num_test=num_test,
      num_points=max(1, num_test // every),
      cond_samples=int(e.cond_samples),
      num_traj=min(int(e.traj_samples), num_test),
      max_exact_pairs=max_states * max_states if s**d <= max_states else 0,
      trend=bool(e.cond_trend),
      eval_seed=int(e.seed),
      name=str(config.benchmark.preset),
    )
    self.eval_key = jax.random.key(int(e.seed))

  # -- training ------------------------------------------------------------------------------

  def init_state(self, rng):
    if self.csbm_type:
      return self.solver.init_state(self.problem, rng)
    return dls.init_state(self.problem, rng, self.solver_cfg)

  def update(self, state, batch):
    del batch  # drawn inside the step from the benchmark with the step key
    if self.csbm_type:
      return self.solver.step_fn(state, self.problem, self.solver_cfg)
    return dls.train_step(state, self.problem, self.solver_cfg, self.solver.loss_fn)

  def get_batch(self, step):
    del step
    return {}

  # -- evaluation ----------------------------------------------------------------------------

  def model(self, state) -> evaluation.Model:
    """The evaluated model in the evaluation's interface (CSBM-type: forward EMA parameters)."""
    if self.csbm_type:
      return self.entry.adapter(
        csbm.make_output(state, self.problem, self.solver_cfg), self.problem, 0
      )
    return self.entry.adapter(state.params, self.problem, 0)

  def evaluate(self, state):
    """``evaluation.evaluate_model`` on the fixed evaluation set, as ``eval/<metric>``."""
    ctx = self.eval_ctx
    metrics = evaluation.evaluate_model(
      ctx, self.model(state), jax.random.fold_in(self.eval_key, 1)
    )
    out = {f"eval/{k}": v for k, v in metrics.items() if v == v}  # NaN = not defined
    out["eval/sb_perplexity_truth"] = float(dsb_metrics.sb_perplexity(self.problem, ctx.x0, ctx.y))
    return out
