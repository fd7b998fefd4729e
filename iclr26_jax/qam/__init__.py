"""QAM: Q-learning with Adjoint Matching (Qiyang Li and Sergey Levine, ICLR 2026).

Reference implementation: github.com/ColinQiyangLi/qam (JAX). This package is an independent
implementation of the paper: a flow policy fine-tuned against a critic ensemble by lean adjoint
matching on the memoryless SDE of the flow, with the BC-flow and FQL baselines on the same critic
and action-chunking machinery.

Entry point: ``train_offline(dataset, *, key, num_updates, config=None)`` trains an agent on a
dict of your own offline arrays and returns one with ``sample_actions(obs, key)`` (``api``);
``resolve_layout(agent_config, platform)`` gives the update's loop layout for a backend.

Modules: ``api`` (``train_offline``), ``config`` (agent hyperparameters, ``resolve_layout``),
``flows`` (flow matching, Euler ODE), ``adjoint`` (memoryless rollout, lean adjoint,
adjoint-matching loss), ``critic`` (pessimistic chunked TD), ``variants`` (QAM-E edit policy),
``baselines`` (FQL one-step policy), ``networks``, ``agent`` (``QAMAgent``: create / update /
sample_actions), ``datasets`` (chunk sampling, point-maze play data), ``method`` (``QAMMethod``
on the trainer, offline and online phases; the ``online`` and ``smoke`` variants of the
experiment configs), ``envs`` (JAX point maze; OGBench generator, loader and host environment; the
``[rl]`` extra).

Exports are imported from their module on first access (PEP 562), so ``import iclr26_jax.qam``
imports neither jax nor the trainer. Two config builders: ``qam.method.default_config()`` (a
whole experiment run) and ``qam.config.agent_defaults()`` (the agent's fields alone; the run's
``agent`` section); ``make_agent_config(fields)`` is the latter with fields replaced, checked.
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
