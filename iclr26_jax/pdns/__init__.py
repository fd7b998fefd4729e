"""PDNS: Proximal Diffusion Neural Sampler (Guo, Choi, Zhu, Tao, Chen; ICLR 2026).

Reference PyTorch code: github.com/AlexandreGUO2001/PDNS.

Entry point (``api``): ``fit_sampler(log_density, dim, *, key, **options)`` for an unnormalised
density on R^dim and ``fit_discrete_sampler(log_prob, num_sites, num_states, *, key, **options)``
for one on {0..num_states-1}^num_sites; both return a ``FittedSampler`` with ``.sample(key, n)``,
``.log_z`` and ``.ess``, at the settings the project's claims use.

Modules: ``references`` (OU / Brownian references, bridges, terminal scores), ``continuous``
(controlled SDE, EM rollout with the Girsanov log-ratio, bridge-matching loss, analytic GMM
control, ``ContinuousSampler``), ``proximal`` (stage targets, weights, adaptive step size, the
stage loop), ``targets`` (Gaussian mixtures incl. GMM-40 and unequal-weight two-mode targets,
MoS, Funnel, Many-Well MW54, with exact log Z, samples and mode assignment), ``particles``
(DW-4, LJ-13/55 energies, centre-of-mass-free noise), ``discrete`` (masked-diffusion CTMC with
random-order unmasking, the token-choice log-ratio, the lambda- / m-form WDCE,
``DiscreteSampler``), ``discrete_targets`` (enumerable Ising, Potts and random-table targets with
exact log Z, marginals and conditionals; streamed exact lattice statistics; Ising row transfer
matrix), ``metrics`` (log Z^, ELBO, ESS, Sinkhorn, MMD, 1-D / energy W2, mode weights, lattice
magnetisation / correlation errors, TV).

Exports: the targets, references and particle systems (cheap modules, imported with the package)
and the samplers, the stage loop, the MCMC reference and the trainer method, which pull in the
training core and Orbax and so are imported on first access (PEP 562). Metrics stay in their
module (``pdns.metrics.ess`` and ``pdns.proximal.ess`` differ).
"""

from iclr26_jax._lazy import lazy_exports

from iclr26_jax.pdns.discrete_targets import (
  EnumerableTarget,
  all_states,
  ising,
  ising_transfer_matrix,
  lattice_exact_stats,
  potts,
  random_table,
  state_index,
)
from iclr26_jax.pdns.particles import (
  ParticleSystem,
  com_free_normal,
  com_free_normal_log_prob,
  dw4,
  lj13,
  lj55,
  pair_distances,
  remove_com,
)
from iclr26_jax.pdns.references import BMReference, OUReference, Reference, ou_reference
from iclr26_jax.pdns.targets import (
  Funnel,
  GaussianMixture,
  ManyWell,
  MixtureOfStudents,
  gaussian,
  gmm40,
  gmm_2d,
  many_well_54,
  mos50,
  two_mode_10d,
  well_separated_mixture,
)

# Exported name -> the module that defines it, imported on first access.
_LAZY = {
  "fit_sampler": "api",
  "fit_discrete_sampler": "api",
  "FittedSampler": "api",
  "ContinuousSampler": "continuous",
  "ControlNet": "continuous",
  "Rollout": "continuous",
  "em_rollout": "continuous",
  "bridge_matching_loss": "continuous",
  "gmm_optimal_control": "continuous",
  "DiscreteSampler": "discrete",
  "DenoiserNet": "discrete",
  "DiscreteRollout": "discrete",
  "ctmc_rollout": "discrete",
  "path_log_ratio": "discrete",
  "wdce_loss": "discrete",
  "ProxConfig": "proximal",
  "ProxResult": "proximal",
  "StageProblem": "proximal",
  "StageSampler": "proximal",
  "run_stages": "proximal",
  "EGNNControl": "egnn",
  "ReferenceSettings": "mcmc",
  "reference_samples": "mcmc",
  "PDNSMethod": "method",
  "make_sampler": "method",
  "make_target": "method",
}

__all__ = [
  # cheap modules, imported above
  "BMReference",
  "EnumerableTarget",
  "Funnel",
  "GaussianMixture",
  "ManyWell",
  "MixtureOfStudents",
  "OUReference",
  "ParticleSystem",
  "Reference",
  "all_states",
  "com_free_normal",
  "com_free_normal_log_prob",
  "dw4",
  "gaussian",
  "gmm40",
  "gmm_2d",
  "ising",
  "ising_transfer_matrix",
  "lattice_exact_stats",
  "lj13",
  "lj55",
  "many_well_54",
  "mos50",
  "ou_reference",
  "pair_distances",
  "potts",
  "random_table",
  "remove_com",
  "state_index",
  "two_mode_10d",
  "well_separated_mixture",
  # imported on first access
  "ContinuousSampler",
  "ControlNet",
  "DenoiserNet",
  "DiscreteRollout",
  "DiscreteSampler",
  "EGNNControl",
  "FittedSampler",
  "PDNSMethod",
  "ProxConfig",
  "ProxResult",
  "ReferenceSettings",
  "Rollout",
  "StageProblem",
  "StageSampler",
  "bridge_matching_loss",
  "ctmc_rollout",
  "em_rollout",
  "fit_discrete_sampler",
  "fit_sampler",
  "gmm_optimal_control",
  "make_sampler",
  "make_target",
  "path_log_ratio",
  "reference_samples",
  "run_stages",
  "wdce_loss",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
