"""Evaluation on the CatSBench presets: the solver table, the evaluation sets and the paper's metrics.

``SOLVERS`` maps a name (the baselines ``truth``, ``identity``, ``independent`` (``REFERENCES``),
``prior``, ``featurewise_eot``; the trained ``dlightsb``, ``dlightsb_m``, ``dlightsb_m_joint``,
``csbm``, ``alpha_csbm``) to a factory and an adapter to the uniform ``Model``. ``prepare_preset``
fixes an evaluation set, ``evaluate_model`` / ``evaluate_solver`` compute ``METRICS`` on it and
``evaluate`` / ``reference_scores`` score any sampler. Trainer runs (``method.DSBMethod``) and the
benchmark table (``experiments/dsb_table.py``) share this table, so they report the same metrics.

Paper: X. Aramayo Carrasco, G. Ksenofontov, A. Leonov, I. Koshelev, A. Korotin, "Entering the Era
of Discrete Diffusion Models: A Benchmark for Schrödinger Bridges and Entropic Optimal Transport",
ICLR 2026 (arXiv 2509.23348); reference code github.com/gregkseno/catsbench. Our instances are
generated in code from a seed. Which model gives which metric: docs/methods/dsb.md ("The
algorithm").
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from iclr26_jax.dsb import benchmark as bm
from iclr26_jax.dsb import metrics as M
from iclr26_jax.dsb.benchmark import Benchmark, CPPotential
from iclr26_jax.dsb.solvers import csbm as csbm_lib
from iclr26_jax.dsb.solvers.alpha_csbm import AlphaCSBM, AlphaCSBMConfig
from iclr26_jax.dsb.solvers.csbm import CSBM, CSBMConfig
from iclr26_jax.dsb.solvers.dlightsb import DLightSB, DLightSBConfig
from iclr26_jax.dsb.solvers.dlightsb_m import DLightSBM, DLightSBMConfig

__all__ = [
  "METRICS",
  "METRIC_DIRECTIONS",
  "REFERENCES",
  "Scores",
  "SOLVERS",
  "Model",
  "SolverEntry",
  "pad_potential",
  "PresetContext",
  "make_solver",
  "check_solver",
  "prepare_preset",
  "evaluate",
  "evaluate_model",
  "evaluate_solver",
  "reference_scores",
  "format_scores",
]

# --------------------------------------------------------------------------------------------
# Models and the solver table.
# --------------------------------------------------------------------------------------------


class Model(NamedTuple):
  """A solver's output in one uniform interface.

  Attributes:
    sample: (rng, x0 (B, D) int) -> (B, D) int32 samples of the model's plan.
    log_prob: (x0 (B, D), y (B, D)) -> (B,) exact log pi_theta(y | x0), or None.
    transition_fn: per-step transition logits, (params, x_t (B, D) int32, t int32) ->
      (B, D, S), or None.
    transition_params: the params pytree passed to ``transition_fn`` (traced under jit).
    reverse_sample: for reversed presets, (rng, y (B, D)) -> (B, D) samples of x_0, or None.
    potential: the model's CPPotential for CP models (the reverse trajectory KL rolls out its
      own mixture chain), else None.
  """

  sample: Callable[[jax.Array, jax.Array], jax.Array]
  log_prob: Callable[[jax.Array, jax.Array], jax.Array] | None = None
  transition_fn: Callable | None = None
  transition_params: Any = None
  reverse_sample: Callable[[jax.Array, jax.Array], jax.Array] | None = None
  potential: CPPotential | None = None


@functools.partial(jax.jit, static_argnums=(4,))
def _cp_sample(potential, reference, rng, x0, chunk):
  return bm.sample_plan(potential, reference, rng, x0, chunk)


@functools.partial(jax.jit, static_argnums=(4,))
def _cp_log_prob(potential, reference, x0, y, chunk):
  return bm.plan_log_prob(potential, reference, x0, y, chunk)


def _cp_transition(params, x_t, t):
  potential, reference = params
  return bm.transition_marginal_log_probs(potential, reference, x_t, t)


def pad_potential(potential: CPPotential, num_potentials: int) -> CPPotential:
  """Pads a CP potential to K' >= K components with zero weight (log a = -inf, log r = 0).

  The padded potential defines the same plan, chain and transitions exactly (the extra
  components have weight zero in every mixture), so models of different K share compiled
  evaluation functions.

  Args:
    potential: CPPotential with K components.
    num_potentials: K' >= K.

  Returns:
    CPPotential with K' components.
  """
  k = potential.num_potentials
  if num_potentials < k:
    raise ValueError(f"num_potentials must be >= K = {k}, got {num_potentials}")
  if num_potentials == k:
    return potential
  extra = num_potentials - k
  dtype = potential.log_alpha.dtype
  d, s = potential.dim, potential.num_categories
  return CPPotential(
    log_alpha=jnp.concatenate([potential.log_alpha, jnp.full((extra,), -jnp.inf, dtype)]),
    log_cp_cores=jnp.concatenate(
      [potential.log_cp_cores, jnp.zeros((d, s, extra), dtype)], axis=-1
    ),
  )


def _cp_model(potential: CPPotential, bench: Benchmark, pad_to: int = 0) -> Model:
  potential = pad_potential(potential, max(potential.num_potentials, int(pad_to)))
  ref, chunk = bench.reference, bench.chunk_elements
  return Model(
    sample=lambda rng, x0: _cp_sample(potential, ref, rng, x0, chunk),
    log_prob=lambda x0, y: _cp_log_prob(potential, ref, x0, y, chunk),
    transition_fn=_cp_transition,
    transition_params=(potential, ref),
    potential=potential,
  )


@jax.jit
def _reverse_prior_sample(log_kernel, rng, y):
  # x_0^d ~ Q̄_{N+1}(., y^d): read the column of y explicitly (no symmetry assumed).
  return jax.random.categorical(rng, log_kernel.T[y], axis=-1).astype(jnp.int32)


class _NoTraining:
  """A baseline that trains nothing: ``solve`` hands the benchmark to its adapter, which builds
  the model (the true plan, the identity, the independent coupling)."""

  def __init__(self, name: str, **overrides: Any):
    if overrides:
      raise ValueError(f"{name} takes no overrides, got {sorted(overrides)}")

  def solve(self, bench: Benchmark, rng: jax.Array) -> Benchmark:
    del rng
    return bench


def _truth_adapter(bench_out: Benchmark, bench: Benchmark, pad_to: int = 0) -> Model:
  model = _cp_model(bench.potential, bench, pad_to)

  def reverse(rng, y):
    # A fresh, independent set of true pairs (y', x_0'): its joint law is the truth's.
    return bench.sample_pairs(rng, y.shape[0])

  return model._replace(reverse_sample=reverse)


def _identity_sample(rng: jax.Array, x0: jax.Array) -> jax.Array:
  del rng
  return jnp.asarray(x0, jnp.int32)


@jax.jit
def _identity_log_prob(x0: jax.Array, y: jax.Array) -> jax.Array:
  # The point mass at x_0: log 1 on y = x_0, log 0 elsewhere (its KL to the truth is infinite).
  return jnp.where(jnp.all(x0 == y, axis=-1), 0.0, -jnp.inf)


def _identity_adapter(out: Benchmark, bench: Benchmark, pad_to: int = 0) -> Model:
  return Model(
    sample=_identity_sample, log_prob=_identity_log_prob, reverse_sample=_identity_sample
  )


def _independent_adapter(out: Benchmark, bench: Benchmark, pad_to: int = 0) -> Model:
  def sample(rng, x0):
    return M.independent_baseline_sample(bench, rng, x0)

  def reverse(rng, y):
    return bench.sample_source(rng, y.shape[0])

  return Model(sample=sample, reverse_sample=reverse)


class _PriorSolver:
  """y ~ q(. | x_0): the CP potential v = 1 (K = 1, log r = 0)."""

  def __init__(self, **overrides: Any):
    if overrides:
      raise ValueError(f"prior takes no overrides, got {sorted(overrides)}")

  def solve(self, bench: Benchmark, rng: jax.Array) -> CPPotential:
    del rng
    dtype = bench.log_cp_cores.dtype
    return CPPotential(
      log_alpha=jnp.zeros((1,), dtype),
      log_cp_cores=jnp.zeros((bench.dim, bench.num_categories, 1), dtype),
    )


def _prior_adapter(potential: CPPotential, bench: Benchmark, pad_to: int = 0) -> Model:
  kernel = bench.reference_log_kernel()
  return _cp_model(potential, bench, pad_to)._replace(
    reverse_sample=lambda rng, y: _reverse_prior_sample(kernel, rng, y)
  )


class _FeaturewiseSolver:
  """Exact 1-D EOT per coordinate (ott-jax Sinkhorn), as a rank-1 CP potential."""

  def __init__(
    self, num_marginal_samples: int = 20_000, threshold: float = 1e-6, max_iterations: int = 10_000
  ):
    self.kwargs = dict(
      num_marginal_samples=num_marginal_samples, threshold=threshold, max_iterations=max_iterations
    )

  def solve(self, bench: Benchmark, rng: jax.Array) -> CPPotential:
    return M.featurewise_eot_potential(bench, rng, **self.kwargs)


def _potential_adapter(out: Any, bench: Benchmark, pad_to: int = 0) -> Model:
  return _cp_model(getattr(out, "potential", out), bench, pad_to)


def _steps_fields(cls: type, overrides: dict) -> dict:
  """Sets steps_per_chunk to divide train_steps when the overrides leave it unset."""
  out = dict(overrides)
  names = {f.name for f in dataclasses.fields(cls)}
  if "train_steps" in out and "steps_per_chunk" in names and "steps_per_chunk" not in out:
    steps = int(out["train_steps"])
    out["steps_per_chunk"] = steps if steps <= 1000 or steps % 1000 else 1000
  return out


def _dlightsb_factory(overrides: dict):
  return DLightSB(DLightSBConfig(**_steps_fields(DLightSBConfig, overrides)))


def _dlightsb_m_factory(loss: str):
  def factory(overrides: dict):
    return DLightSBM(DLightSBMConfig(**_steps_fields(DLightSBMConfig, {"loss": loss, **overrides})))

  return factory


def _csbm_factory(name: str):
  solver_cls, cfg_cls = (CSBM, CSBMConfig) if name == "csbm" else (AlphaCSBM, AlphaCSBMConfig)

  def factory(overrides: dict):
    out = dict(overrides)
    if "train_steps" in out and "epoch_steps" not in out:
      # Laptop runs keep the reference's schedule shape: CSBM alternates directions every
      # epoch (14 epochs), alpha-CSBM runs 3 + 4 epochs.
      out["epoch_steps"] = max(1, int(out["train_steps"]) // (14 if name == "csbm" else 7))
      if name == "csbm" and "num_first_iterations" not in out:
        out["num_first_iterations"] = 1
    return solver_cls(cfg_cls(**_steps_fields(cfg_cls, out)))

  return factory


@dataclasses.dataclass(frozen=True)
class _NetTransition:
  """Hashable (net, chunk) wrapper of csbm.model_transition_logits: params are traced, so every
  CSBM-type model with the same network definition shares one compiled trajectory KL."""

  net: Any
  chunk_elements: int

  def __call__(self, params, x_t, t):
    net_params, reference = params
    return csbm_lib.model_transition_logits(
      self.net, net_params, reference, x_t, t, self.chunk_elements
    )


def _transition_adapter(out: Any, bench: Benchmark, pad_to: int = 0) -> Model:
  """A CSBM-type output (``CSBMOutput``) as a Model: samples and per-step transition logits."""
  return Model(
    sample=out.sample,
    transition_fn=_NetTransition(out.net, int(out.chunk_elements)),
    transition_params=(out.params, out.reference),
  )


class SolverEntry(NamedTuple):
  """One row of the solver table.

  Attributes:
    factory: overrides dict -> solver object with ``solve(benchmark, rng)``.
    adapter: (solver output, benchmark, pad_to) -> Model; CP-potential models are padded to
      at least ``pad_to`` components (``pad_potential``).
    trained: whether the solver trains (``steps`` applies).
    supports_reverse: whether reversed (image) presets are supported.
    description: one line for tables and --help.
    solver_cls: the trained solver's class (None for baselines).
    config_cls: its config dataclass (None for baselines).
    paper_steps: the paper's number of training steps (None for baselines).
    fixed: config fields the row fixes (``dlightsb_m_joint``: loss="joint").
  """

  factory: Callable[[dict], Any]
  adapter: Callable[[Any, Benchmark, int], Model]
  trained: bool
  supports_reverse: bool
  description: str
  solver_cls: type | None = None
  config_cls: type | None = None
  paper_steps: int | None = None
  fixed: dict | None = None


SOLVERS: dict[str, SolverEntry] = {
  "truth": SolverEntry(
    lambda o: _NoTraining("truth", **o),
    _truth_adapter,
    False,
    True,
    "the true plan (an exact sampler's scores)",
  ),
  "identity": SolverEntry(
    lambda o: _NoTraining("identity", **o), _identity_adapter, False, True, "y = x_0, moves nothing"
  ),
  "independent": SolverEntry(
    lambda o: _NoTraining("independent", **o),
    _independent_adapter,
    False,
    True,
    "y ~ p_1 ignoring x_0",
  ),
  "prior": SolverEntry(
    lambda o: _PriorSolver(**o), _prior_adapter, False, True, "y ~ q(.|x_0), the reference"
  ),
  "featurewise_eot": SolverEntry(
    lambda o: _FeaturewiseSolver(**o),
    _potential_adapter,
    False,
    False,
    "exact 1-D EOT per coordinate",
  ),
  "dlightsb": SolverEntry(
    _dlightsb_factory,
    _potential_adapter,
    True,
    False,
    "DLightSB (unpaired KL objective)",
    DLightSB,
    DLightSBConfig,
    100_000,
  ),
  "dlightsb_m": SolverEntry(
    _dlightsb_m_factory("kl"),
    _potential_adapter,
    True,
    False,
    "DLightSB-M, per-coordinate KL loss, independent coupling",
    DLightSBM,
    DLightSBMConfig,
    100_000,
    {"loss": "kl"},
  ),
  "dlightsb_m_joint": SolverEntry(
    _dlightsb_m_factory("joint"),
    _potential_adapter,
    True,
    False,
    "DLightSB-M, exact joint-transition loss",
    DLightSBM,
    DLightSBMConfig,
    100_000,
    {"loss": "joint"},
  ),
  "csbm": SolverEntry(
    _csbm_factory("csbm"),
    _transition_adapter,
    True,
    False,
    "CSBM (alternating D-IMF)",
    CSBM,
    CSBMConfig,
    280_000,
  ),
  "alpha_csbm": SolverEntry(
    _csbm_factory("alpha_csbm"),
    _transition_adapter,
    True,
    False,
    "alpha-CSBM (online D-IMF)",
    AlphaCSBM,
    AlphaCSBMConfig,
    140_000,
  ),
}
"""name -> SolverEntry."""


def check_solver(name: str) -> SolverEntry:
  if name not in SOLVERS:
    raise ValueError(f"unknown solver {name!r}; choose from {sorted(SOLVERS)}")
  return SOLVERS[name]


def make_solver(name: str, overrides: dict | None = None, steps: int | None = None) -> Any:
  """Builds a solver from the table.

  Args:
    name: a key of ``SOLVERS``.
    overrides: config fields (trained solvers) or constructor keywords (baselines).
    steps: train_steps for trained solvers (ignored by baselines); overrides win.

  Returns:
    an object with ``solve(benchmark, rng)``.
  """
  entry = check_solver(name)
  overrides = dict(overrides or {})
  if steps is not None and entry.trained:
    overrides.setdefault("train_steps", int(steps))
  return entry.factory(overrides)


# --------------------------------------------------------------------------------------------
# Evaluation.
# --------------------------------------------------------------------------------------------

METRICS = (
  "cond_shape",
  "cond_trend",
  "shape",
  "trend",
  "sb_perplexity",
  "traj_kl_fwd",
  "traj_kl_rev",
  "mc_kl",
  "exact_kl",
  "exact_tv",
  "c2st",
)
"""Metric columns of a row (NaN where not defined for the solver or preset)."""

METRIC_DIRECTIONS: dict[str, str] = {
  "cond_shape": "higher",
  "cond_trend": "higher",
  "shape": "higher",
  "trend": "higher",
  "sb_perplexity": "truth",
  "traj_kl_fwd": "lower",
  "traj_kl_rev": "lower",
  "mc_kl": "lower",
  "exact_kl": "lower",
  "exact_tv": "lower",
  "c2st": "higher",
}
"""Which way each metric of ``METRICS`` is better: ``"higher"`` for the shape / trend scores (1 -
a mean TV between histograms) and ``c2st`` (1 - 2 |AUROC - 0.5|), where 1 is the truth's and the
truth's own row is below 1 by sampling noise only; ``"lower"`` for the KLs and the TV (0 for the
truth; the unbiased ``mc_kl`` may dip below 0 near it); ``"truth"`` for ``sb_perplexity``, where
closeness to the truth's own value (``sb_perplexity_truth``) counts: too concentrated scores
below it, too spread above. The table: docs/methods/dsb.md ("Reading the scores")."""

REFERENCES = ("truth", "identity", "independent")
"""The reference rows beside a solver's scores: the exact plan, the identity map y = x_0 and the
independent coupling y ~ p_1; a useful solver sits clearly nearer the truth than both maps."""


@dataclasses.dataclass
class PresetContext:
  """A built preset with its fixed evaluation set (shared by all solvers and seeds).

  Attributes:
    name: canonical preset name.
    bench: the Benchmark.
    x0: (num_test, D) test sources (reversed presets: the true pairs' sources).
    y: (num_test, D) true plan samples given x0.
    points: (P, D) conditioning points.
    enumerable: whether exact KL / TV by enumeration apply.
    log_p1: (S^D,) exact log p_1 on enumerable instances, else None.
    settings: the evaluation sizes.
  """

  name: str
  bench: Benchmark
  x0: jax.Array
  y: jax.Array
  points: jax.Array
  enumerable: bool
  log_p1: jax.Array | None
  settings: dict


def prepare_preset(
  preset: str | Benchmark,
  instance_seed: int = 0,
  *,
  num_test: int = 4096,
  num_points: int = 16,
  cond_samples: int = 1000,
  num_traj: int = 512,
  max_exact_pairs: int = 1 << 20,
  source_samples: Any = None,
  preset_overrides: dict | None = None,
  c2st_steps: int = 300,
  trend: bool = True,
  eval_seed: int | None = None,
  name: str = "custom",
) -> PresetContext:
  """Builds a preset and its evaluation set (test pairs, one conditioning point per
  evaluation batch of num_test / num_points).

  Args:
    preset: preset name or alias, or a ready Benchmark (named "custom"; then
      ``source_samples`` and ``preset_overrides`` must be None).
    instance_seed: seed of the instance and of the evaluation draws.
    num_test: test pairs (paper: 20,000).
    num_points: conditioning points (paper: 157).
    cond_samples: conditional samples per point (paper: 1,000).
    num_traj: test sources used for the trajectory KLs.
    max_exact_pairs: enumerate (exact KL / TV) when S^(2D) <= this.
    source_samples: image presets' user-supplied (n, 3072) source array.
    preset_overrides: further ``benchmark.make_preset`` keyword overrides.
    c2st_steps: classifier training steps of the C2ST (reversed presets).
    trend: compute trend / cond trend (needs (D S)^2 pair histograms; off above a size limit).
    eval_seed: seed of the evaluation draws (default: ``instance_seed``).
    name: the context's name when ``preset`` is a ready Benchmark.

  Returns:
    PresetContext.
  """
  for value, field in (
    (num_test, "num_test"),
    (num_points, "num_points"),
    (cond_samples, "cond_samples"),
    (num_traj, "num_traj"),
    (c2st_steps, "c2st_steps"),
  ):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
      raise ValueError(f"{field} must be an int >= 1, got {value!r}")
  if num_points > num_test:
    raise ValueError(f"num_points ({num_points}) must not exceed num_test ({num_test})")
  if isinstance(preset, Benchmark):
    if source_samples is not None or preset_overrides:
      raise ValueError(
        "source_samples / preset_overrides apply to preset names, not to a ready Benchmark"
      )
    bench = preset
  else:
    name = bm.resolve_preset(preset)
    bench = bm.make_preset(
      name, instance_seed, source_samples=source_samples, **(preset_overrides or {})
    )
  key = jax.random.fold_in(
    jax.random.key(instance_seed if eval_seed is None else eval_seed), 20_000
  )
  x0, y = bench.sample_pairs(key, num_test)
  batch = num_test // num_points
  points = M.conditioning_points(x0, batch)[:num_points]
  s, d = bench.num_categories, bench.dim
  enumerable = s ** (2 * d) <= max_exact_pairs and not bench.reverse
  log_p1 = M.exact_target_log_probs(bench, max_exact_pairs)[1] if enumerable else None
  with_trend = bool(trend) and (d * s) ** 2 <= M._PAIR_HIST_LIMIT
  settings = dict(
    instance_seed=instance_seed,
    num_test=num_test,
    num_points=num_points,
    cond_samples=cond_samples,
    num_traj=num_traj,
    c2st_steps=c2st_steps,
    trend=with_trend,
  )
  return PresetContext(
    name=name,
    bench=bench,
    x0=x0,
    y=y,
    points=points,
    enumerable=enumerable,
    log_p1=log_p1,
    settings=settings,
  )


def _nan_row() -> dict[str, float]:
  return {m: float("nan") for m in METRICS}


def evaluate_model(ctx: PresetContext, model: Model, rng: jax.Array) -> dict[str, float]:
  """All metrics of one model on a prepared preset (NaN where undefined).

  Args:
    ctx: the prepared preset.
    model: the solver's Model.
    rng: PRNG key for the model's (and the conditional truth's) samples.

  Returns:
    {metric: float} for every name in METRICS.
  """
  bench = ctx.bench
  s, d = bench.num_categories, bench.dim
  out = _nan_row()
  keys = jax.random.split(rng, 6)
  if bench.reverse:
    return _evaluate_reverse(ctx, model, keys)
  y_hat = jnp.asarray(model.sample(keys[0], ctx.x0))
  out["shape"] = float(M.shape_score(ctx.y, y_hat, s))
  with_trend = ctx.settings.get("trend", (d * s) ** 2 <= M._PAIR_HIST_LIMIT)
  if with_trend:
    out["trend"] = float(M.trend_score(ctx.y, y_hat, s))
  cond = M.conditional_shape_trend(
    keys[1],
    ctx.points,
    bench.sample_plan,
    model.sample,
    s,
    num_samples=ctx.settings["cond_samples"],
    with_trend=with_trend,
  )
  out["cond_shape"] = float(cond["cond_shape"])
  if with_trend:
    out["cond_trend"] = float(cond["cond_trend"])
  out["sb_perplexity"] = float(M.sb_perplexity(bench, ctx.x0, y_hat))
  if model.transition_fn is not None and bench.num_steps >= 1:
    x_traj = ctx.x0[: ctx.settings["num_traj"]]
    out["traj_kl_fwd"] = float(
      M.trajectory_kl_forward(keys[2], bench, x_traj, model.transition_fn, model.transition_params)
    )
    out["traj_kl_rev"] = float(
      M.trajectory_kl_reverse(
        keys[3],
        bench,
        x_traj,
        model.transition_fn,
        model.transition_params,
        model_potential=model.potential,
      )
    )
  if model.log_prob is not None:
    out["mc_kl"] = float(M.mc_conditional_kl(keys[4], bench, ctx.x0, model.log_prob))
  if ctx.enumerable:
    log_prob = model.log_prob
    if log_prob is None and ctx.log_p1 is not None and model.transition_fn is None:
      # Only the independent baseline lacks both: its plan is p_1 whatever x_0.
      log_p1 = ctx.log_p1
      log_prob = lambda x0, y: log_p1[M.state_index(y, s)]  # noqa: E731
    elif log_prob is None:
      table = M.exact_plan_from_transition_logits(
        bench, model.transition_fn, model.transition_params, max_states=s**d
      )
      log_prob = lambda x0, y: table[M.state_index(x0, s), M.state_index(y, s)]  # noqa
    exact = M.exact_conditional_kl_tv(bench, log_prob)
    out["exact_kl"], out["exact_tv"] = float(exact.kl), float(exact.tv)
  return out


class Scores(dict):
  """``evaluate``'s result: the ``{metric: float}`` dict, with the reference rows beside it.

  A plain dict of the sampler's scores (``scores["cond_shape"]``), plus:

  Attributes:
    references: ``{name: {metric: float}}`` for ``REFERENCES`` (the truth, the identity map, the
      independent coupling) on the same evaluation set; empty unless ``evaluate`` was called
      with ``references=True``.

  ``str(scores)`` (what ``print`` shows) is ``format_scores``: one line per metric, the sampler's
  value beside the reference rows' and which way is better; ``repr`` is the dict's.
  """

  def __init__(self, values: Any = (), references: dict[str, dict[str, float]] | None = None):
    super().__init__(values)
    self.references = {name: dict(row) for name, row in (references or {}).items()}

  def summary(self) -> str:
    """``format_scores(self, self.references)``."""
    return format_scores(self, self.references)

  def __str__(self) -> str:
    return self.summary()


_DIRECTION_WORDS = {
  "higher": "higher; truth ~ 1",
  "lower": "lower; truth = 0",
  "truth": "closest to the truth's",
}


def _num(value: float | None) -> str:
  if value is None or value != value:
    return "—"
  if value in (float("inf"), float("-inf")):
    return "inf" if value > 0 else "-inf"
  return f"{value:.4g}"


def format_scores(
  scores: dict[str, float] | None, references: dict[str, dict[str, float]] | None = None
) -> str:
  """A plain-text table of a sampler's scores beside the reference rows.

  Args:
    scores: ``{metric: float}`` of the sampler (``evaluate``'s result), or None for the
      reference rows alone.
    references: ``{name: {metric: float}}`` (``reference_scores``), or None.

  Returns:
    One line per metric of ``METRICS`` present in any column: the sampler's value, each
    reference row's, and which way is better (``METRIC_DIRECTIONS``); "—" where a column lacks
    the metric, ``inf`` for an infinite KL (the identity map's). A last line gives the truth's
    SB perplexity on the test pairs when ``scores`` holds it, and names ``references=True``
    when no reference row is given.
  """
  references = dict(references or {})
  columns: list[tuple[str, dict]] = []
  if scores is not None:
    columns.append(("sampler", scores))
  columns += list(references.items())
  metrics = [m for m in METRICS if any(m in col for _, col in columns)]
  head = ["metric"] + [name for name, _ in columns] + ["better"]
  rows = [
    [m] + [_num(col.get(m)) for _, col in columns] + [_DIRECTION_WORDS[METRIC_DIRECTIONS[m]]]
    for m in metrics
  ]
  widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head) - 1)]

  def line(cells):
    first = cells[0].ljust(widths[0])
    mid = [c.rjust(w) for c, w in zip(cells[1:-1], widths[1:])]
    return "  ".join([first] + mid + [cells[-1]]).rstrip()

  out = [line(head)] + [line(r) for r in rows]
  if scores is not None and "sb_perplexity_truth" in scores:
    out.append(
      f"the truth's sb_perplexity on the test pairs: {_num(scores['sb_perplexity_truth'])} "
      "(the value to match; neither lower nor higher is better)"
    )
  if not references:
    out.append(
      "reference rows (truth, identity, independent): evaluate(..., references=True) or "
      "dsb.reference_scores"
    )
  return "\n".join(out)


def _forward_context(
  bench: Benchmark | str,
  *,
  num_test: int,
  num_points: int,
  cond_samples: int,
  instance_seed: int,
  max_exact_pairs: int,
) -> PresetContext:
  """``evaluate``'s evaluation set (refuses the reversed image presets)."""
  if (
    isinstance(bench, Benchmark)
    and bench.reverse
    or (isinstance(bench, str) and bm.PRESETS.get(bm.resolve_preset(bench), {}).get("reverse"))
  ):
    raise ValueError("evaluate scores forward samplers; the image presets are reversed (y -> x_0)")
  return prepare_preset(
    bench,
    instance_seed,
    num_test=num_test,
    num_points=num_points,
    cond_samples=cond_samples,
    max_exact_pairs=max_exact_pairs,
    eval_seed=instance_seed,
  )


def _score_sampler(
  ctx: PresetContext,
  sample_fn: Callable[[jax.Array, jax.Array], jax.Array],
  log_prob_fn: Callable[[jax.Array, jax.Array], jax.Array] | None,
  key: jax.Array,
) -> dict[str, float]:
  """The metrics of one sampler on ``evaluate``'s evaluation set (NaN entries left out)."""

  def checked(rng, x0):
    x1 = jnp.asarray(sample_fn(rng, x0))
    if x1.shape != x0.shape or not jnp.issubdtype(x1.dtype, jnp.integer):
      raise ValueError(
        f"sample_fn must return integer states of shape {tuple(x0.shape)} (B, D); got "
        f"{x1.dtype} {tuple(x1.shape)}"
      )
    return x1.astype(jnp.int32)

  model = Model(sample=checked, log_prob=log_prob_fn)
  if log_prob_fn is None:
    # Enumeration needs a log-density (or per-step transitions).
    ctx = dataclasses.replace(ctx, enumerable=False)
  out = evaluate_model(ctx, model, key)
  if log_prob_fn is not None:
    # A NaN here would otherwise drop mc_kl (and exact_kl / exact_tv) from the result silently.
    bad = [m for m in ("mc_kl", "exact_kl", "exact_tv") if m in out and out[m] != out[m]]
    if bad and (bad != ["exact_kl", "exact_tv"] or ctx.enumerable):
      raise ValueError(
        f"log_prob_fn returned NaN (or +inf) on the model's own samples: {', '.join(bad)} "
        "undefined; it must return the finite log pi(x1 | x0) of each pair, (B,) float"
      )
  return {k: v for k, v in out.items() if v == v}


def _reference_samplers(ctx: PresetContext) -> dict[str, tuple[Callable, Callable | None]]:
  """``{name: (sample_fn, log_prob_fn or None)}`` of ``REFERENCES`` on a forward preset."""
  bench = ctx.bench
  s = bench.num_categories
  independent_log_prob = None
  if ctx.log_p1 is not None:  # enumerable: p_1 is known exactly, whatever x_0
    log_p1 = ctx.log_p1
    independent_log_prob = lambda x0, y: log_p1[M.state_index(y, s)]  # noqa: E731
  return {
    "truth": (bench.sample_solution, bench.plan_log_prob),
    "identity": (_identity_sample, _identity_log_prob),
    "independent": (
      lambda rng, x0: M.independent_baseline_sample(bench, rng, x0),
      independent_log_prob,
    ),
  }


def _reference_rows(ctx: PresetContext, key: jax.Array) -> dict[str, dict[str, float]]:
  return {
    name: _score_sampler(ctx, sample_fn, log_prob_fn, key)
    for name, (sample_fn, log_prob_fn) in _reference_samplers(ctx).items()
  }


def reference_scores(
  bench: Benchmark | str,
  *,
  key: jax.Array,
  num_test: int = 4096,
  num_points: int = 16,
  cond_samples: int = 1000,
  instance_seed: int = 0,
  max_exact_pairs: int = 1 << 20,
) -> dict[str, dict[str, float]]:
  """``evaluate``'s metrics for the three reference samplers, to read any solver's scores against.

  ``truth`` is the exact plan (``bench.sample_solution``, log-density ``bench.plan_log_prob``):
  what an exact sampler scores at these sample sizes. ``identity`` is y = x_0, whose log-density
  is the point mass at x_0 (infinite KLs). ``independent`` is y ~ p_1 drawn independently of x_0,
  with exact KL / TV and MC KL only on enumerable instances, where p_1 is known exactly.

  The evaluation set and the keys are ``evaluate``'s: with the same preset, sizes,
  ``instance_seed`` and ``key``, the ``truth`` row equals ``evaluate(bench, bench.sample_solution,
  key=key, log_prob_fn=bench.plan_log_prob, ...)`` (without ``sb_perplexity_truth``), so a
  solver's ``evaluate`` scores and these rows are comparable entry by entry.

  Args:
    bench: a forward ``Benchmark`` or a ``PRESETS`` name (not an image preset).
    key: PRNG key of the samplers' draws (and of the conditional truth's).
    num_test, num_points, cond_samples, instance_seed, max_exact_pairs: as in ``evaluate``.

  Returns:
    ``{"truth": {...}, "identity": {...}, "independent": {...}}``, each ``{metric: float}`` for
    the metrics defined for that sampler (``inf`` for the identity's KLs).

  Examples:
    >>> import jax
    >>> from iclr26_jax import dsb
    >>> refs = dsb.reference_scores(
    ...   "tiny_d2_s6_uniform", key=jax.random.key(0), num_test=512, num_points=4,
    ...   cond_samples=256)
    >>> sorted(refs)
    ['identity', 'independent', 'truth']
    >>> refs["truth"]["exact_kl"] < 1e-5, refs["identity"]["exact_kl"]
    (True, inf)
  """
  ctx = _forward_context(
    bench,
    num_test=num_test,
    num_points=num_points,
    cond_samples=cond_samples,
    instance_seed=instance_seed,
    max_exact_pairs=max_exact_pairs,
  )
  return _reference_rows(ctx, key)


def evaluate(
  bench: Benchmark | str,
  sample_fn: Callable[[jax.Array, jax.Array], jax.Array],
  *,
  key: jax.Array,
  log_prob_fn: Callable[[jax.Array, jax.Array], jax.Array] | None = None,
  num_test: int = 4096,
  num_points: int = 16,
  cond_samples: int = 1000,
  instance_seed: int = 0,
  max_exact_pairs: int = 1 << 20,
  references: bool = False,
) -> Scores:
  """The benchmark's metrics for any sampler ``sample_fn(key, x0) -> x1`` of a plan from p_0.

  Test pairs (x_0, x_1) ~ pi* (``num_test``, drawn from ``instance_seed``) are compared with
  (x_0, sample_fn(key, x_0)): ``shape`` / ``trend``, ``cond_shape`` / ``cond_trend`` at
  ``num_points`` conditioning sources with ``cond_samples`` samples of the truth and of
  ``sample_fn`` each, and ``sb_perplexity``. With ``log_prob_fn`` also ``mc_kl`` and, where
  S^(2D) <= ``max_exact_pairs``, ``exact_kl`` / ``exact_tv`` by enumeration.

  Which way each is better: ``METRIC_DIRECTIONS``. Trivial maps already score well above 0 on
  the shape scores, so read a sampler's scores against the reference rows: ``references=True``
  adds the truth, the identity map and the independent coupling on the same evaluation set
  (``reference_scores``; three more evaluations), and ``print(scores)`` shows them side by side.

  Args:
    bench: a ``Benchmark`` (forward, not an image preset) or a ``PRESETS`` name.
    sample_fn: ``(key, x0 (B, D) int32) -> (B, D)`` ints in [0, S); called with B = num_test
      and B = cond_samples (the conditioning rows repeated).
    key: PRNG key of the model's samples (and of the conditional truth's).
    log_prob_fn: optional exact ``(x0 (B, D), x1 (B, D)) -> (B,)`` log-density.
    num_test, num_points, cond_samples: evaluation sizes (paper: 20,000, 157, 1,000).
    instance_seed: seed of the instance (for a name) and of the test pairs.
    max_exact_pairs: enumerate when S^(2D) is at most this.
    references: also score ``REFERENCES`` into ``scores.references``.

  Returns:
    ``Scores``, a ``{metric: float}`` dict for ``shape``, ``cond_shape``, ``sb_perplexity``,
    ``sb_perplexity_truth``, where defined ``trend`` / ``cond_trend`` and, with a log-density,
    ``mc_kl`` (and ``exact_kl`` / ``exact_tv``); its ``references`` attribute holds the
    reference rows (empty unless ``references=True``).

  Examples:
    >>> import jax
    >>> from iclr26_jax import dsb
    >>> bench = dsb.Benchmark.from_preset("hd_d2_s50_prior_gaussian_a0.02")
    >>> sizes = dict(num_test=512, num_points=4, cond_samples=256)
    >>> truth = dsb.evaluate(bench, bench.sample_solution, key=jax.random.key(0), **sizes)
    >>> ident = dsb.evaluate(bench, lambda k, x0: x0, key=jax.random.key(0), **sizes)
    >>> sorted(truth)[:4]
    ['cond_shape', 'cond_trend', 'sb_perplexity', 'sb_perplexity_truth']
    >>> truth["cond_shape"] > 0.8 > 0.2 > ident["cond_shape"]
    True
    >>> scores = dsb.evaluate(bench, lambda k, x0: x0, key=jax.random.key(0), references=True,
    ...   **sizes)
    >>> sorted(scores.references), scores["cond_shape"] == scores.references["identity"]["cond_shape"]
    (['identity', 'independent', 'truth'], True)
    >>> scores.summary().splitlines()[0].split()
    ['metric', 'sampler', 'truth', 'identity', 'independent', 'better']
  """
  if not callable(sample_fn):
    raise ValueError(
      f"sample_fn must be a callable (key, x0) -> x1; got {type(sample_fn).__name__}"
    )
  if log_prob_fn is not None and not callable(log_prob_fn):
    raise ValueError(f"log_prob_fn must be None or callable; got {type(log_prob_fn).__name__}")
  ctx = _forward_context(
    bench,
    num_test=num_test,
    num_points=num_points,
    cond_samples=cond_samples,
    instance_seed=instance_seed,
    max_exact_pairs=max_exact_pairs,
  )
  out = _score_sampler(ctx, sample_fn, log_prob_fn, key)
  out["sb_perplexity_truth"] = float(M.sb_perplexity(ctx.bench, ctx.x0, ctx.y))
  return Scores(out, _reference_rows(ctx, key) if references else None)


def _evaluate_reverse(ctx: PresetContext, model: Model, keys: jax.Array) -> dict[str, float]:
  """Reversed presets: condition on y, compare (y, x_0) with (y, x_hat_0)."""
  bench = ctx.bench
  s = bench.num_categories
  out = _nan_row()
  if model.reverse_sample is None:
    raise ValueError("this solver does not support reversed (image) presets")
  got = model.reverse_sample(keys[0], ctx.y)
  if isinstance(got, tuple):  # the truth returns fresh true pairs (x_0', y')
    x_hat, y_cond = got
  else:
    x_hat, y_cond = jnp.asarray(got), ctx.y
  out["shape"] = float(M.shape_score(ctx.x0, x_hat, s))
  real = jnp.concatenate([ctx.y, ctx.x0], axis=-1)
  fake = jnp.concatenate([y_cond, x_hat], axis=-1)
  out["c2st"] = float(M.c2st(keys[1], real, fake, s, train_steps=ctx.settings["c2st_steps"]).score)
  # Swapped roles (reversed presets): pi*^d(y^d | x_hat_0).
  out["sb_perplexity"] = float(M.sb_perplexity(bench, x_hat, y_cond))
  return out


def evaluate_solver(
  name: str,
  preset: str | PresetContext,
  seed: int = 0,
  *,
  steps: int | None = None,
  overrides: dict | None = None,
  pad_to: int = 0,
  **prepare_kwargs: Any,
) -> dict[str, Any]:
  """Builds the preset (unless a PresetContext is given), trains the solver and evaluates it.

  Args:
    name: a key of ``SOLVERS``.
    preset: preset name / alias, or a PresetContext from ``prepare_preset``.
    seed: solver seed (training and model sampling).
    steps: train_steps for trained solvers.
    overrides: solver config overrides.
    pad_to: pad CP-potential models to at least this many zero-weight components for
      evaluation (``pad_potential``; exact, saves compiles when models of several K are run).
    **prepare_kwargs: ``prepare_preset`` arguments when ``preset`` is a name.

  Returns:
    {"solver", "preset", "seed", "train_seconds", "eval_seconds", **metrics}.
  """
  entry = check_solver(name)
  ctx = preset if isinstance(preset, PresetContext) else prepare_preset(preset, **prepare_kwargs)
  if ctx.bench.reverse and not entry.supports_reverse:
    raise ValueError(
      f"solver {name!r} does not support reversed (image) presets; supported: "
      f"{sorted(n for n, e in SOLVERS.items() if e.supports_reverse)}"
    )
  solver = make_solver(name, overrides, steps)
  k_train, k_eval = jax.random.split(jax.random.key(seed))
  t0 = time.time()
  out = solver.solve(ctx.bench, k_train)
  for leaf in jax.tree.leaves(out):
    if isinstance(leaf, jax.Array):
      leaf.block_until_ready()
  t1 = time.time()
  metrics = evaluate_model(ctx, entry.adapter(out, ctx.bench, pad_to), k_eval)
  t2 = time.time()
  return dict(
    solver=name,
    preset=ctx.name,
    seed=int(seed),
    train_seconds=t1 - t0,
    eval_seconds=t2 - t1,
    **metrics,
  )
