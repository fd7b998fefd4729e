"""The DSB solvers through the shared trainer (``python -m experiments.main``).

One ``Method`` trains any of the room's solvers on a CatSBench instance: ``dlightsb``,
``dlightsb_m`` (spec §8.1–8.2), ``csbm`` (alternating D-IMF, §8.3) and ``alpha_csbm`` (§8.4).
``update`` is the solver's own training step (``dlightsb.train_step`` with the solver's loss, or
``csbm.csbm_train_step`` / ``alpha_csbm.alpha_csbm_train_step``), the same function the solvers'
``solve()`` scans, so the trainer adds checkpoint / resume, metrics JSONL and the NaN guard
without a second copy of the step. Training data are drawn inside the step from the benchmark
with the step key (fresh x_0 ~ p_0 and y ~ p_1 every step, spec §6), so ``get_batch`` returns an
empty batch; CSBM's direction and coupling phase are functions of ``state.step`` and the other
direction's frozen EMA parameters live in ``state.extras["ema"]``, so a resumed run is exact.

Config (``default_config(solver)``; experiment files in ``experiments/configs/dsb``):
``benchmark.*`` (instance: one of the 12 HD presets, or ``tiny``, D = 2, S = 10, enumerable),
``solver`` and ``hparams.*`` (the solver dataclass's fields, paper defaults; ``train_steps`` is the
trainer's ``num_steps`` and ``batch_size`` the trainer's), ``eval.*``.

Logged: the solver's ``train/...`` metrics; at evaluation ``eval/cond_shape``,
``eval/cond_trend`` (``eval.cond_samples`` samples of truth and model at every
``eval.point_every``-th test source, spec: 1,000 per point, one point per batch of 128),
``eval/shape``, ``eval/sb_perplexity`` and ``eval/sb_perplexity_truth`` (the truth's own value),
``eval/fwd_traj_kl`` (D N-scaled, on ``eval.traj_samples`` sources) and, when S^D <=
``eval.exact_max_states``, ``eval/exact_kl`` and ``eval/exact_tv`` (exact enumeration).
CSBM-type solvers are evaluated with the forward EMA parameters, DLightSB-type ones with the
potential itself.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import ml_collections

from iclr26_jax.core import config as config_lib
from iclr26_jax.core.trainer import Method
from iclr26_jax.dsb import benchmark as bm
from iclr26_jax.dsb import metrics as dsb_metrics
from iclr26_jax.dsb.solvers import csbm
from iclr26_jax.dsb.solvers import dlightsb as dls
from iclr26_jax.dsb.solvers.alpha_csbm import AlphaCSBM, AlphaCSBMConfig
from iclr26_jax.dsb.solvers.csbm import CSBM, CSBMConfig
from iclr26_jax.dsb.solvers.dlightsb import DLightSB, DLightSBConfig
from iclr26_jax.dsb.solvers.dlightsb_m import DLightSBM, DLightSBMConfig

__all__ = ["SOLVERS", "TINY", "PRESET_NAMES", "default_config", "get_config", "DSBMethod",
           "make_benchmark"]

# solver name -> (solver class, config dataclass, paper number of steps)
SOLVERS = {
    "dlightsb": (DLightSB, DLightSBConfig, 100_000),
    "dlightsb_m": (DLightSBM, DLightSBMConfig, 100_000),
    "csbm": (CSBM, CSBMConfig, 280_000),
    "alpha_csbm": (AlphaCSBM, AlphaCSBMConfig, 140_000),
}
_TRAINER_OWNED = ("train_steps", "steps_per_chunk", "batch_size")

# A tiny enumerable instance (S^(2D) = 10^4 pairs): uniform reference (lam^8 ~ 0.55), random CP
# potential with K = 3; the independent coupling sits at an exact conditional KL of about 0.9.
TINY = dict(dim=2, num_categories=10, reference="uniform", alpha=0.05, num_steps=3,
            num_skip_steps=2, num_potentials=3, potential="uniform", bump_sigma=2.0,
            source="gaussian")
PRESET_NAMES = tuple(sorted(bm.HD_PRESETS)) + ("tiny",)


def _preset_fields(name: str) -> dict[str, Any]:
    if name == "tiny":
        return dict(TINY)
    fields = dict(bm.HD_PRESETS[name])
    return {k: fields[k] for k in TINY}


def default_config(solver: str, preset: str = "hd_d16_s50_prior_gaussian_a0.02"
                   ) -> ml_collections.ConfigDict:
    """The unlocked default config of ``solver`` on ``preset`` (paper hyperparameters)."""
    if solver not in SOLVERS:
        raise config_lib.ConfigError(f"config key 'solver' must be one of {sorted(SOLVERS)}; "
                                     f"got {solver!r}")
    _, cfg_cls, steps = SOLVERS[solver]
    c = config_lib.trainer_defaults()
    c.method = "dsb"
    c.solver = solver             # dlightsb | dlightsb_m | csbm | alpha_csbm
    c.seed = 5                    # the reference scripts train with seed 5
    c.num_steps = steps           # = the solver's train_steps
    c.batch_size = 128            # = the solver's batch_size (alpha-CSBM: two halves)
    c.log_every = 1000
    c.eval_every = 20_000
    c.checkpoint_every = 10_000
    b = c.benchmark = ml_collections.ConfigDict()
    b.preset = preset             # label: one of PRESET_NAMES (fields below may be overridden)
    b.seed = 0                    # instance seed (our instances differ from the released files)
    for key, value in _preset_fields(preset).items():
        b[key] = value            # dim, num_categories, reference, alpha, num_steps, ...
    # The solver dataclass's fields (documented there), paper defaults.
    defaults = cfg_cls()
    c.hparams = ml_collections.ConfigDict(
        {f.name: getattr(defaults, f.name) for f in dataclasses.fields(cfg_cls)
         if f.name not in _TRAINER_OWNED})
    e = c.eval = ml_collections.ConfigDict()
    e.seed = 2                    # the reference scripts test with seed 2
    e.num_test = 20_000           # test sources (shape, perplexity; conditioning points)
    e.point_every = 128           # one conditioning point per evaluation batch of 128
    e.cond_samples = 1000         # conditional samples per point, truth and model
    e.cond_trend = True           # also cond trend ((D S)^2 pair histograms per point)
    e.traj_samples = 1024         # sources of the forward trajectory KL
    e.exact_max_states = 256      # exact KL / TV by enumeration when S^D <= this
    return c


def get_config(solver: str, arg: str | None) -> ml_collections.ConfigDict:
    """``get_config`` of ``experiments/configs/dsb/<solver>.py``.

    Variants: the instance, one of the 12 HD presets
    ``hd_d{2,16,64}_s50_prior_gaussian_a{0.02,0.05}`` / ``hd_d{2,16,64}_s50_prior_uniform_a{0.005,
    0.01}`` (default ``hd_d16_s50_prior_gaussian_a0.02``; D, S = 50, N = 15, s = 8) or ``tiny``
    (D = 2, S = 10, N = 3, enumerable: exact KL / TV are logged); ``smoke`` (20 steps, small model
    and evaluation, ``tiny`` unless a preset is named).

    Overrides (``key=value`` after the variants, or ``--config.key=value``): ``benchmark.dim``,
    ``benchmark.num_categories``, ``benchmark.reference``, ``benchmark.alpha``,
    ``benchmark.seed``, ``benchmark.num_steps`` / ``num_skip_steps`` (keep (N + 1) s = 128 for the
    paper's problem), any ``hparams.*`` field of the solver config, ``eval.cond_samples`` (1,000
    in the paper), ``eval.num_test``.
    """
    variants, _ = config_lib.parse_arg(arg)
    presets = sorted(variants & set(PRESET_NAMES))
    if len(presets) > 1:
        raise config_lib.ConfigError(f"config variants name several presets {presets}; pick one")
    smoke = "smoke" in variants
    preset = presets[0] if presets else ("tiny" if smoke else "hd_d16_s50_prior_gaussian_a0.02")
    c = default_config(solver, preset)
    if smoke:
        fields = {"batch_size": 32, "eval.num_test": 64, "eval.point_every": 32,
                  "eval.cond_samples": 64, "eval.traj_samples": 32}
        if solver in ("dlightsb", "dlightsb_m"):
            fields["hparams.num_potentials"] = 16
        else:
            fields.update({"hparams.hidden": 32, "hparams.epoch_steps": 5,
                           "hparams.num_first_iterations": 1})
        config_lib.apply_smoke(c, **fields)
    return config_lib.finalize(c, arg, known_variants=("smoke",) + PRESET_NAMES)


def make_benchmark(cfg: ml_collections.ConfigDict) -> bm.Benchmark:
    """The Benchmark of ``cfg.benchmark`` (generated from its seed)."""
    b = cfg.benchmark
    try:
        return bm.make_benchmark(
            int(b.dim), int(b.num_categories), b.reference, float(b.alpha), int(b.num_steps),
            int(b.num_skip_steps), int(b.num_potentials), seed=int(b.seed), source=b.source,
            potential=b.potential, bump_sigma=float(b.bump_sigma))
    except ValueError as e:
        raise config_lib.ConfigError(f"config key 'benchmark': {e}") from None


def solver_config(cfg: ml_collections.ConfigDict):
    """The solver dataclass config from ``cfg.hparams`` plus the trainer's steps and batch."""
    if cfg.solver not in SOLVERS:
        raise config_lib.ConfigError(f"config key 'solver' must be one of {sorted(SOLVERS)}; "
                                     f"got {cfg.solver!r}")
    _, cfg_cls, _ = SOLVERS[cfg.solver]
    try:
        return cfg_cls(train_steps=int(cfg.num_steps), steps_per_chunk=1,
                       batch_size=int(cfg.batch_size), **cfg.hparams.to_dict())
    except (TypeError, ValueError) as e:
        raise config_lib.ConfigError(f"config key 'hparams': {e}") from None


class DSBMethod(Method):
    """Any DSB solver through ``core.trainer.train``; see the module docstring."""

    name = "dsb"

    def __init__(self, config: ml_collections.ConfigDict):
        super().__init__(config)
        self.problem = make_benchmark(config)
        self.solver_cfg = solver_config(config)
        self.solver = SOLVERS[config.solver][0](self.solver_cfg)
        self.csbm_type = isinstance(self.solver, CSBM)
        e = config.eval
        for key in ("num_test", "point_every", "cond_samples", "traj_samples"):
            if int(e[key]) < 1:
                raise config_lib.ConfigError(f"config key 'eval.{key}' must be >= 1; got {e[key]}")
        ref, chunk = self.problem.reference, self.problem.chunk_elements
        if self.csbm_type:
            net = csbm.network(self.problem, self.solver_cfg)
            self.transition_fn = lambda p, x_t, t: csbm.model_transition_logits(
                net, p, ref, x_t, t, chunk)
        else:
            self.transition_fn = lambda p, x_t, t: bm.transition_marginal_log_probs(
                p, ref, x_t, t, chunk)
        self.eval_key = jax.random.key(int(e.seed))
        self.x_test = self.problem.sample_source(jax.random.fold_in(self.eval_key, 0),
                                                 int(e.num_test))

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

    def model_fns(self, state):
        """(sampler(rng, x0) -> y, transition params, exact model_log_prob or None).

        The transition callable ``self.transition_fn(params, x_t, t)`` is built once, so the
        trajectory KL and the enumeration compile once per run, not once per evaluation.
        """
        bench = self.problem
        ref, chunk = bench.reference, bench.chunk_elements
        s, d = bench.num_categories, bench.dim
        if self.csbm_type:
            out = csbm.make_output(state, bench, self.solver_cfg)
            sampler, params = out.sample, out.params
        else:
            params = state.params
            sampler = lambda key, x0: bm.sample_plan(params, ref, key, x0, chunk)
        log_prob = None
        if s ** d <= int(self.config.eval.exact_max_states):
            if self.csbm_type:
                table = dsb_metrics.exact_plan_from_transition_logits(
                    bench, self.transition_fn, params, max_states=s ** d)
                log_prob = lambda x0, y: table[dsb_metrics.state_index(x0, s),
                                               dsb_metrics.state_index(y, s)]
            else:
                log_prob = lambda x0, y: bm.plan_log_prob(params, ref, x0, y, chunk)
        return sampler, params, log_prob

    def evaluate(self, state):
        e = self.config.eval
        bench = self.problem
        sampler, params, log_prob = self.model_fns(state)
        keys = [jax.random.fold_in(self.eval_key, i) for i in range(1, 5)]
        x_test = self.x_test
        y_true = bench.sample_plan(keys[0], x_test)
        y_model = sampler(keys[1], x_test)
        points = dsb_metrics.conditioning_points(x_test, int(e.point_every))
        cond = dsb_metrics.conditional_shape_trend(
            keys[2], points, bench.sample_plan, sampler, bench.num_categories,
            int(e.cond_samples), with_trend=bool(e.cond_trend))
        out = {f"eval/{k}": float(v) for k, v in cond.items()}
        out["eval/shape"] = float(dsb_metrics.shape_score(y_true, y_model, bench.num_categories))
        out["eval/sb_perplexity"] = float(dsb_metrics.sb_perplexity(bench, x_test, y_model))
        out["eval/sb_perplexity_truth"] = float(dsb_metrics.sb_perplexity(bench, x_test, y_true))
        if bench.num_steps >= 1:
            x_traj = x_test[:int(e.traj_samples)]
            out["eval/fwd_traj_kl"] = float(dsb_metrics.trajectory_kl_forward(
                keys[3], bench, x_traj, self.transition_fn, params))
        if log_prob is not None:
            exact = dsb_metrics.exact_conditional_kl_tv(bench, log_prob)
            out["eval/exact_kl"] = float(exact.kl)
            out["eval/exact_tv"] = float(exact.tv)
        return out
