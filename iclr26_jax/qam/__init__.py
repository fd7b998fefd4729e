"""QAM: Q-learning with Adjoint Matching, offline RL with a flow policy tuned to a critic.

Qiyang Li and Sergey Levine, "Q-learning with Adjoint Matching", ICLR 2026; reference code
github.com/ColinQiyangLi/qam (JAX). An independent implementation, with the BC-flow and FQL
baselines on the same critic and action-chunking machinery.

Entry point: ``train_offline`` (``api``). Modules: ``api``, ``config``, ``flows``, ``adjoint``,
``critic``, ``variants``, ``baselines``, ``networks``, ``agent``, ``datasets``, ``online``,
``method``, ``envs``. Exports load on first access (PEP 562): ``import iclr26_jax.qam`` imports
neither jax nor the trainer.

The algorithm, with its equations and reference hyperparameters: docs/methods/qam.md
("The algorithm").
"""

from iclr26_jax._lazy import lazy_exports

# Exported name -> the module that defines it.
_EXPORTS = {
  "train_offline": "api",
  "make_agent_config": "api",
  "OfflineAgent": "api",
  "CPU_CONFIG": "api",
  "check_dataset": "api",
  "returns_to_go": "api",
  "auto_reward_scale": "api",
  "resolve_layout": "config",
  "QAMAgent": "agent",
  "QAMMethod": "method",
  "load_data": "method",
  "sample_chunks": "datasets",
  "generate_pointmaze": "datasets",
  "flow_matching_loss": "flows",
  "euler_ode": "flows",
  "rollout": "adjoint",
  "lean_adjoint": "adjoint",
  "adjoint_matching_loss": "adjoint",
  "pessimistic_target": "critic",
  "td_loss": "critic",
  "MLP": "networks",
  "VelocityField": "networks",
  "CriticEnsemble": "networks",
}

__all__ = [
  "CPU_CONFIG",
  "CriticEnsemble",
  "MLP",
  "OfflineAgent",
  "QAMAgent",
  "QAMMethod",
  "VelocityField",
  "adjoint_matching_loss",
  "auto_reward_scale",
  "check_dataset",
  "euler_ode",
  "flow_matching_loss",
  "generate_pointmaze",
  "lean_adjoint",
  "load_data",
  "make_agent_config",
  "pessimistic_target",
  "resolve_layout",
  "returns_to_go",
  "rollout",
  "sample_chunks",
  "td_loss",
  "train_offline",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
