"""PDNS through the shared trainer: ``python -m experiments.main --config=experiments/configs/pdns/...``.

W. Guo, J. Choi, Y. Zhu, M. Tao, Y. Chen, "Proximal Diffusion Neural Sampler", ICLR 2026
(arXiv 2510.03824); reference PyTorch code github.com/AlexandreGUO2001/PDNS.

``PDNSMethod.update`` is ``proximal.make_stage_fns(...).update``, the same pure step that
``StageSampler.fit`` scans, so the trainer adds checkpoint / resume, metrics JSONL and the NaN
guard without a second copy of the stage loop; ``get_batch`` returns an empty batch (the data is
the stage buffer). Also here: the run config (``default_config``, ``prox_config``, ``validate``),
``make_target``, ``make_sampler`` and the ``baseline`` / ``smoke`` variants. The targets, config
fields and logged metrics: docs/methods/pdns.md ("Configuration and logged metrics").
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import chex
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from iclr26_jax.core import config as config_lib
from iclr26_jax.core import optim as core_optim
from iclr26_jax.core.trainer import Method
from iclr26_jax.pdns import (
  continuous,
  discrete,
  discrete_targets,
  mcmc,
  metrics,
  particles,
  proximal,
  references,
)
from iclr26_jax.pdns import targets as targets_lib

__all__ = [
  "CONTINUOUS_TARGETS",
  "PARTICLE_TARGETS",
  "LATTICE_TARGETS",
  "TARGETS",
  "default_config",
  "OPTIM_FIELDS",
  "optim_config",
  "prox_config",
  "Target",
  "make_target",
  "make_sampler",
  "lattice_log_prob",
  "PDNSMethod",
  "BASELINE",
  "smoke",
]

CONTINUOUS_TARGETS = ("gmm2d", "two_mode_10d", "gmm40", "funnel", "many_well", "mos")
PARTICLE_TARGETS = ("dw4", "lj13")
LATTICE_TARGETS = ("ising", "potts")
TARGETS = CONTINUOUS_TARGETS + PARTICLE_TARGETS + LATTICE_TARGETS
MAX_LOGGED_MODES = 8
MAX_POTTS_EXACT_BITS = 26
MAX_ISING_TRANSFER_SIZE = 8
# Histogram range of the inter-atomic distances (eval/distance_tv) per particle target.
DIST_RANGE = {"dw4": (0.0, 8.0), "lj13": (0.0, 4.0)}


def _err(key, msg):
  return config_lib.ConfigError(f"config key '{key}' {msg}")


OPTIM_FIELDS = {"learning_rate": "learning_rate", "b1": "b1", "b2": "b2", "grad_clip": "grad_clip"}
"""``config.optim`` key -> ``ProxConfig`` field: what the stage optimiser (Adam, constant learning
rate, fresh state every stage; ``ProxConfig.optimizer``) reads."""
_OPTIM_OWNED = tuple(OPTIM_FIELDS.values()) + ("batch_size",)  # ProxConfig fields not in prox


def optim_config() -> ml_collections.ConfigDict:
  """``core.optim.optim_defaults()`` with the stage optimiser's defaults (``ProxConfig``'s: Adam,
  constant lr 1e-3, betas (0.9, 0.999), global-norm clip 100)."""
  p = proximal.ProxConfig()
  o = core_optim.optim_defaults()
  o.name = "adam"
  for key, field in OPTIM_FIELDS.items():
    o[key] = getattr(p, field)
  return o


def default_config() -> ml_collections.ConfigDict:
  """Trainer fields plus ``target``, ``sampler``, ``optim`` (the stage optimiser:
  ``optim_config()``), ``prox`` (the other ``ProxConfig`` fields; ``batch_size`` is the
  trainer's) and ``eval``.

  The schedule-derived trainer fields are ``ml_collections`` field references, computed from
  ``prox.*`` and ``batch_size`` whenever they are read, so an override of those (after the colon
  or as a ``--config.prox.*`` flag, which absl applies after ``get_config``) can never leave them
  stale: ``num_steps`` = (prox.num_stages + prox.refine_stages) x S with S = steps per stage =
  prox.epochs_per_stage x (prox.buffer_size // batch_size), ``checkpoint_every`` =
  ``eval_every`` = S, ``log_every`` = min(50, S). Setting one of them (an override, ``smoke``)
  replaces its formula by the value given.
  """
  c = config_lib.trainer_defaults()
  c.method = "pdns"
  c.batch_size = 256
  c.target = ml_collections.ConfigDict(
    dict(name="gmm2d", dim=10, size=4, beta=1.0, h=0.0, j=1.0, q=4, seed=0)
  )
  c.sampler = ml_collections.ConfigDict(
    dict(
      hidden=64,
      depth=2,
      # continuous
      sde_steps=100,
      param="control",
      loss="control",
      t_max=0.999,
      reference="ou",
      schedule="linear_decreasing",
      sigma_bar=1.0,
      alpha_min=0.1,
      alpha_max=10.0,
      drop_log_nu_const=False,
      network="mlp",
      # discrete
      formulation="lambda",
      replicates=8,
      antithetic=False,
    )
  )
  c.optim = optim_config()
  p = proximal.ProxConfig()
  c.prox = ml_collections.ConfigDict(
    {f.name: getattr(p, f.name) for f in dataclasses.fields(p) if f.name not in _OPTIM_OWNED}
  )
  c.eval = ml_collections.ConfigDict(dict(num_samples=2048, seed=12345))
  # Particle targets: MCMC reference samples (``mcmc.reference_samples``; num_samples = 0: off)
  # and the distance-histogram bins; cache_dir "" = ``mcmc.DEFAULT_CACHE_DIR``.
  c.eval.reference = ml_collections.ConfigDict(
    dict(mcmc.ReferenceSettings(), cache_dir="", dist_bins=100)
  )
  c.eval.reference.num_samples = 0
  _derive_schedule_fields(c)
  return c


def _derive_schedule_fields(c) -> None:
  """Makes ``num_steps``, ``checkpoint_every``, ``eval_every`` and ``log_every`` field references
  computed from ``prox.*`` and ``batch_size`` (see ``default_config``; the same numbers as
  ``proximal.steps_per_stage`` / ``total_stages``). Each field gets its own chain of
  references, so setting one replaces only that one."""
  p = c.prox

  def stage():  # S = epochs_per_stage * (buffer_size // batch_size)
    return p.get_ref("epochs_per_stage") * (p.get_ref("buffer_size") // c.get_ref("batch_size"))

  c.num_steps = (p.get_ref("num_stages") + p.get_ref("refine_stages")) * stage()
  c.checkpoint_every = stage()
  c.eval_every = stage()
  s = stage()
  c.log_every = (s + 50 - abs(s - 50)) // 2  # min(S, 50), exact in integers


def prox_config(c) -> proximal.ProxConfig:
  """``ProxConfig`` from the run config, the one place it is built: ``c.prox``, ``c.optim``
  mapped onto the optimiser fields (``OPTIM_FIELDS``) and ``c.batch_size``.

  Raises:
    ConfigError: naming the key of a bad value (``prox``, ``optim.*``, ``batch_size``), or an
      ``optim`` key the stage optimiser does not read set away from its value.
  """
  optim = config_lib.optim_fields(
    c.optim, OPTIM_FIELDS, optim_config(), "the PDNS stage optimiser (Adam, constant learning rate)"
  )
  return config_lib.to_dataclass(
    proximal.ProxConfig,
    c.prox,
    "prox",
    keys={"batch_size": "batch_size", **{f: f"optim.{k}" for k, f in OPTIM_FIELDS.items()}},
    batch_size=int(c.batch_size),
    **optim,
  )


# --------------------------------------------------------------------------------------- targets


def validate(c: ml_collections.ConfigDict) -> None:
  """The checks on entry (``experiments.registry.VALIDATORS``): the sampler's and the
  evaluation's sizes (``ConfigError`` naming the dotted key), then ``prox_config`` (the stage
  schedule and optimiser)."""
  config_lib.positive(c, "sampler.hidden", "sampler.depth", "sampler.sde_steps")
  config_lib.positive(c, "sampler.replicates", "target.dim", "target.size", "target.q")
  config_lib.nonneg(c, "eval.num_samples", "sampler.sigma_bar", "sampler.alpha_min")
  config_lib.nonneg(c, "sampler.alpha_max", "target.beta")
  config_lib.check_range(c, "sampler.t_max", gt=0, le=1)
  config_lib.nonneg(c, "eval.reference.num_samples", "eval.reference.burnin", optional=True)
  config_lib.positive(c, "eval.reference.chains", "eval.reference.dist_bins", optional=True)
  prox_config(c)


@dataclasses.dataclass
class Target:
  """What the method needs from a target.

  Attributes:
    name: ``target.name``.
    kind: "continuous" or "lattice".
    dim: d (continuous) or D = L^2 sites.
    q: token values (lattices).
    log_prob_unnorm: log pi~ (tempered), (n, d) float or (n, D) int -> (n,).
    log_z_true: exact log Z or None.
    assign: mode assignment x (n, d) -> (n,) int, or None.
    mode_weights: exact mode weights (J,) or None.
    lattice_truth: dict with ``abs_mag`` / ``p_neg`` / ``mag_dist`` (Ising) or ``order``
      (Potts), or None.
    n_particles, spatial_dim: particle systems (CoM-free reference); 0 otherwise.
    energy: E(x), (n, d) -> (n,), for particle systems; None otherwise.
  """

  name: str
  kind: str
  dim: int
  q: int = 0
  log_prob_unnorm: Callable | None = None
  log_z_true: float | None = None
  assign: Callable | None = None
  mode_weights: np.ndarray | None = None
  lattice_truth: dict | None = None
  n_particles: int = 0
  spatial_dim: int = 0
  energy: Callable | None = None


def lattice_log_prob(
  x: jax.Array, *, size: int, beta: float, model: str = "ising", j: float = 1.0, h: float = 0.0
) -> jax.Array:
  """-beta H(x) of a periodic size x size lattice, x (n, L^2) int (row-major sites) -> (n,).

  Ising (tokens {0, 1}, s = 2x - 1): H = -J sum_i s_i (s_right(i) + s_down(i)) - h sum_i s_i.
  Potts: H = -J sum_i (1[x_i = x_right(i)] + 1[x_i = x_down(i)]). Same convention as
  ``discrete_targets.ising`` / ``potts`` (on L = 2 each pair is counted twice).
  """
  chex.assert_shape(
    x,
    (None, size * size),
    exception_type=ValueError,
    custom_message=(f"x must have shape (n, {size * size}); got {tuple(x.shape)}"),
  )
  right, down = discrete_targets.lattice_pairs(size)
  if model == "ising":
    s = 2.0 * x.astype(jnp.float32) - 1.0
    energy = -j * jnp.sum(s * (s[:, right] + s[:, down]), -1) - h * jnp.sum(s, -1)
  elif model == "potts":
    same = (x == x[:, right]).astype(jnp.float32) + (x == x[:, down]).astype(jnp.float32)
    energy = -j * jnp.sum(same, -1)
  else:
    raise ValueError(f"model must be 'ising' or 'potts'; got {model!r}")
  return -beta * energy


def make_target(c) -> Target:
  """The ``Target`` of ``c.target`` (ConfigError naming the field)."""
  t = c.target
  name = t.name
  beta = float(t.beta)
  if not beta > 0:
    raise _err("target.beta", f"must be > 0; got {beta}")
  if name in LATTICE_TARGETS:
    size = int(t.size)
    if size < 2:
      raise _err("target.size", f"must be >= 2; got {size}")
    q = 2 if name == "ising" else int(t.q)
    if q < 2:
      raise _err("target.q", f"must be >= 2; got {q}")
    if name == "potts" and float(t.h) != 0.0:
      raise _err("target.h", "must be 0 for potts (no field term)")
    dim = size * size
    fn = jax.jit(
      lambda x: lattice_log_prob(x, size=size, beta=beta, model=name, j=float(t.j), h=float(t.h))
    )
    log_z, truth = None, None
    if name == "ising" and size <= MAX_ISING_TRANSFER_SIZE:
      tm = discrete_targets.ising_transfer_matrix(size, beta, float(t.j), float(t.h))
      log_z = tm["log_z"]
      truth = {"abs_mag": tm["abs_mag"], "p_neg": tm["p_neg"], "mag_dist": tm["mag_dist"]}
    elif name == "potts" and dim * math.log2(q) <= MAX_POTTS_EXACT_BITS:
      ex = discrete_targets.lattice_exact_stats(
        size, beta, "potts", q, float(t.j), chunk=q ** min(dim, int(math.log(8192, q)))
      )
      log_z, truth = ex["log_z"], {"order": ex["order"]}
    return Target(
      name=name,
      kind="lattice",
      dim=dim,
      q=q,
      log_prob_unnorm=fn,
      log_z_true=log_z,
      lattice_truth=truth,
    )
  if name in PARTICLE_TARGETS:
    system = particles.dw4() if name == "dw4" else particles.lj13()
    return Target(
      name=name,
      kind="continuous",
      dim=system.dim,
      log_prob_unnorm=lambda x: beta * system.log_prob_unnorm(x),
      n_particles=system.n_particles,
      spatial_dim=system.spatial_dim,
      energy=system.energy,
    )
  if name not in CONTINUOUS_TARGETS:
    raise _err("target.name", f"must be one of {TARGETS}; got {name!r}")
  d = int(t.dim)
  try:
    if name == "gmm2d":
      tgt = targets_lib.gmm_2d()
    elif name == "two_mode_10d":
      tgt = targets_lib.well_separated_mixture(
        (0.3, 0.7), dim=d, separation=8.0, std=1.0, log_z=2.0
      )
    elif name == "gmm40":
      tgt = targets_lib.gmm40(dim=d, seed=int(t.seed))
    elif name == "funnel":
      tgt = targets_lib.Funnel.create(dim=d)
    elif name == "many_well":
      tgt = targets_lib.ManyWell.create(dim=d, m=min(5, d), delta=4.0)
    else:
      tgt = targets_lib.mos50(dim=d, seed=int(t.seed))
  except ValueError as e:
    raise _err("target.dim", str(e)) from None
  log_prob = tgt.log_prob_unnorm if beta == 1.0 else (lambda x: beta * tgt.log_prob_unnorm(x))
  exact = beta == 1.0
  has_modes = hasattr(tgt, "assign")
  return Target(
    name=name,
    kind="continuous",
    dim=tgt.dim,
    log_prob_unnorm=log_prob,
    log_z_true=float(tgt.log_z) if exact else None,
    assign=tgt.assign if has_modes and exact else None,
    mode_weights=(
      np.asarray(tgt.mode_weights_exact(), np.float64) if has_modes and exact else None
    ),
  )


def make_sampler(c, target: Target) -> proximal.StageSampler:
  """``ContinuousSampler`` (OU or Brownian reference, centre-of-mass-free for particle targets) or
  ``DiscreteSampler`` for ``target``."""
  s = c.sampler
  try:
    if target.kind == "lattice":
      return discrete.DiscreteSampler(
        target.log_prob_unnorm,
        target.dim,
        target.q,
        formulation=s.formulation,
        replicates=int(s.replicates),
        antithetic=bool(s.antithetic),
        hidden=int(s.hidden),
        depth=int(s.depth),
      )
    if s.reference == "ou":
      ref = references.ou_reference(
        target.dim,
        schedule=s.schedule,
        sigma_bar=float(s.sigma_bar),
        alpha_min=float(s.alpha_min),
        alpha_max=float(s.alpha_max),
        drop_log_nu_const=bool(s.drop_log_nu_const),
        n_particles=target.n_particles,
        spatial_dim=target.spatial_dim,
      )
    elif s.reference == "bm":
      ref = references.BMReference(
        dim=target.dim,
        sigma_const=float(s.sigma_bar),
        drop_log_nu_const=bool(s.drop_log_nu_const),
        n_particles=target.n_particles,
        spatial_dim=target.spatial_dim,
      )
    else:
      raise _err("sampler.reference", f"must be 'ou' or 'bm'; got {s.reference!r}")
    return continuous.ContinuousSampler(
      ref,
      target.log_prob_unnorm,
      num_steps=int(s.sde_steps),
      param=s.param,
      loss=s.loss,
      t_max=float(s.t_max),
      hidden=int(s.hidden),
      depth=int(s.depth),
      network=str(s.network),
    )
  except config_lib.ConfigError:
    raise
  except ValueError as e:
    raise _err("sampler", str(e)) from None


def _potts_order(x: jax.Array, q: int) -> jax.Array:
  counts = jnp.sum(jax.nn.one_hot(x, q, dtype=jnp.float32), 1)  # (n, q)
  return jnp.mean((q * jnp.max(counts, -1) / x.shape[1] - 1.0) / (q - 1))


class PDNSMethod(Method):
  """PDNS (and the eta = infinity baseline) on the shared trainer; its config fields and logged
  metrics: docs/methods/pdns.md ("Configuration and logged metrics")."""

  name = "pdns"

  def __init__(self, config):
    super().__init__(config)
    c = config
    self.prox = prox_config(c)  # validates eps < log(buffer_size), sizes, names
    self.target = make_target(c)
    self.sampler = make_sampler(c, self.target)
    self.fns = self.sampler.stage_fns(self.prox)
    self.steps_per_stage = self.fns.steps_per_stage
    n_eval = int(c.eval.num_samples)
    if n_eval < 2:
      raise _err("eval.num_samples", f"must be >= 2; got {n_eval}")
    self._eval_key = jax.random.PRNGKey(int(c.eval.seed))
    self._eval_rollout = jax.jit(lambda p, k: self.sampler.rollout(p, k, n_eval))
    self._eval_jit = None
    self.reference = self._reference_samples()

  def _reference_samples(self) -> dict | None:
    """MCMC reference samples of a particle target (``eval.reference``), or None."""
    ref = self.config.eval.reference
    if self.target.name not in PARTICLE_TARGETS or int(ref.num_samples) == 0:
      return None
    settings = {k: ref[k] for k in mcmc.REFERENCE_FIELDS}
    try:
      mcmc.ReferenceSettings(**settings)
    except ValueError as e:
      raise _err("eval.reference", str(e)) from None
    return mcmc.reference_samples(
      self.target.name,
      settings,
      str(ref.cache_dir) or mcmc.DEFAULT_CACHE_DIR,
      beta=float(self.config.target.beta),
    )

  def init_state(self, rng):
    return self.fns.init_state(rng)

  def update(self, state, batch):
    return self.fns.update(state, batch)

  def get_batch(self, step):
    del step
    return {}

  def sample(self, state, key: jax.Array | None = None):
    """(x, ell, r) of ``eval.num_samples`` paths of the EMA model (default: the eval key)."""
    return self._eval_rollout(state.extras["ema"], self._eval_key if key is None else key)

  def _eval_device(self, params, key, ref=None):
    """One jitted pass: rollout, weight statistics and sample statistics (device scalars); ref
    (M, d): the particle reference samples (an argument, not a constant: no constant folding)."""
    x, ell, r = self.sampler.rollout(params, key, int(self.config.eval.num_samples))
    w = (ell + r).astype(jnp.float32)
    st = metrics.weight_stats(w)
    out = {
      "eval/log_z": st["eval/log_z"],
      "eval/elbo": st["eval/elbo"],
      "eval/path_kl": st["eval/path_kl"],
      "eval/ess": st["eval/ess"],
      "eval/max_wbar": st["weights/max_wbar"],
    }
    tgt = self.target
    if tgt.name == "ising":
      s = 2.0 * x.astype(jnp.float32) - 1.0
      mag = jnp.sum(s, -1)
      out["eval/magnetization"] = jnp.mean(jnp.abs(mag)) / tgt.dim
      out["eval/p_neg"] = jnp.mean((mag < 0).astype(jnp.float32))
      # empirical law of M = 2k - D over k = number of up spins, (D + 1,)
      n_up = jnp.sum(x, -1).astype(jnp.int32)
      out["eval/mag_hist"] = jnp.bincount(n_up, length=tgt.dim + 1) / x.shape[0]
    elif tgt.name == "potts":
      out["eval/magnetization"] = _potts_order(x, tgt.q)
    elif tgt.energy is not None:
      out["eval/energy_mean"] = jnp.mean(tgt.energy(x))
      if ref is not None:
        pm = metrics.particle_metrics(
          tgt.energy,
          x,
          ref,
          tgt.n_particles,
          tgt.spatial_dim,
          bins=int(self.config.eval.reference.dist_bins),
          dist_range=DIST_RANGE[tgt.name],
        )
        out.update({f"eval/{k}": v for k, v in pm.items()})
        out["eval/energy_mean_ref"] = jnp.mean(tgt.energy(ref))
    elif tgt.assign is not None:
      out["eval/mode_weights"] = metrics.mode_weights(tgt.assign(x), tgt.mode_weights.shape[0])
    return out

  def evaluate(self, state) -> dict[str, float]:
    if self._eval_jit is None:
      self._eval_jit = jax.jit(self._eval_device)
    ref = None if self.reference is None else jnp.asarray(self.reference["samples"])
    dev = jax.device_get(self._eval_jit(state.extras["ema"], self._eval_key, ref))
    sampled = dev.pop("eval/mode_weights", None)
    mag_hist = dev.pop("eval/mag_hist", None)
    out = {k: float(v) for k, v in dev.items()}
    tgt = self.target
    if tgt.log_z_true is not None:
      out["eval/log_z_true"] = float(tgt.log_z_true)
      out["eval/log_z_error"] = out["eval/log_z"] - float(tgt.log_z_true)
    if tgt.kind == "lattice":
      out["eval/log_z_rel_ref"] = out["eval/log_z"] - tgt.dim * math.log(tgt.q)
      truth = tgt.lattice_truth or {}
      key = "abs_mag" if tgt.name == "ising" else "order"
      if key in truth:
        out["eval/magnetization_true"] = truth[key]
        out["eval/magnetization_error"] = abs(out["eval/magnetization"] - truth[key])
      if "p_neg" in truth:
        out["eval/p_neg_true"] = truth["p_neg"]
      if "mag_dist" in truth and mag_hist is not None:
        out["eval/mag_tv"] = float(
          0.5 * np.sum(np.abs(np.asarray(mag_hist, np.float64) - truth["mag_dist"]))
        )
    elif sampled is not None:
      sampled = np.asarray(sampled, np.float64)
      out["eval/mode_weight_tv"] = float(0.5 * np.sum(np.abs(sampled - tgt.mode_weights)))
      if sampled.shape[0] <= MAX_LOGGED_MODES:
        out.update({f"eval/mode_weight_{i}": float(v) for i, v in enumerate(sampled)})
    return out


# -- the variants every experiment config shares (``experiments/configs/pdns/*.py``) ----------
BASELINE = {"prox.eta_inf": True}
"""The ``baseline`` variant: eta = infinity (plain WDCE) at every stage, same budget."""

SMOKE_FIELDS = {
  "batch_size": 32,
  "prox.buffer_size": 128,
  "prox.epochs_per_stage": 2,
  "prox.num_stages": 2,
  "prox.refine_stages": 1,
  "sampler.hidden": 16,
  "sampler.depth": 1,
  "sampler.sde_steps": 16,
  "sampler.replicates": 2,
  "eval.num_samples": 256,
  "eval_every": 0,
}

# Smoke variant of the particle targets' MCMC reference (plain MALA, 16 chains, 64 steps).
SMOKE_REFERENCE = {
  "eval.reference.num_samples": 128,
  "eval.reference.chains": 16,
  "eval.reference.burnin": 40,
  "eval.reference.thin": 3,
  "eval.reference.num_temps": 1,
  "eval.reference.descent_steps": 0,
}


def smoke(c: ml_collections.ConfigDict) -> None:
  """The ``smoke`` variant: ``core.config.apply_smoke`` with ``SMOKE_FIELDS`` (3 stages of 8
  steps, tiny network); particle targets with an MCMC reference get ``SMOKE_REFERENCE``."""
  config_lib.apply_smoke(c, **SMOKE_FIELDS)
  if int(c.eval.reference.num_samples) > 0:  # particle targets: a tiny MCMC
    config_lib.apply_overrides(c, SMOKE_REFERENCE)
