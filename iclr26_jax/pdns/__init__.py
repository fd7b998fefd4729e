"""PDNS: Proximal Diffusion Neural Sampler.

W. Guo, J. Choi, Y. Zhu, M. Tao, Y. Chen, "Proximal Diffusion Neural Sampler", ICLR 2026
(arXiv 2510.03824); reference PyTorch code github.com/AlexandreGUO2001/PDNS.

Entry point (``api``): ``fit_sampler(log_density, dim, *, key, **options)`` on R^dim and
``fit_discrete_sampler(log_prob, num_sites, num_states, *, key, **options)`` on
{0..num_states-1}^num_sites; both return a ``FittedSampler`` (``.sample(key, n)``, ``.log_z``,
``.ess``). The targets, references and particle systems are imported with the package; the
samplers, the stage loop, the MCMC reference and the trainer method on first access (PEP 562).
Metrics stay in their module (``pdns.metrics.ess`` and ``pdns.proximal.ess`` differ). The
algorithm, with its equations and reference hyperparameters: docs/methods/pdns.md ("The algorithm").
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
