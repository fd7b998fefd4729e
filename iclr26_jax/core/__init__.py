"""The shared training core: configs, distributed init, sharding, state, trainer, checkpoints,
metrics and optimizers. It imports nothing from a method package.

Modules: ``config``, ``distributed``, ``sharding``, ``train_state``, ``trainer`` (the ``Method``
protocol and ``train``), ``checkpoint`` (Orbax), ``metrics``, ``optim`` (optax chains, EMA),
``workdir`` (lock, config changes), ``datacheck``, ``interrupt``, ``preemption``, ``loop`` and
``validate``; the smallest complete ``Method`` is ``experiments/toy.py``. The names in ``__all__``
are imported on first access (PEP 562), so importing this package imports nothing: config files
and the workdir helpers stay free of jax.

Runs, checkpoints and resume: docs/runs.md; several devices and processes: docs/scaling.md.
"""

from iclr26_jax._lazy import lazy_exports

# Exported name -> the module that defines it.
_EXPORTS = {
  "TrainState": "train_state",
  "Method": "trainer",
  "TrainResult": "trainer",
  "NonFiniteError": "trainer",
  "make_step_fn": "trainer",
  "train": "trainer",
  "Checkpointer": "checkpoint",
  "CheckpointMismatchError": "checkpoint",
  "MetricWriter": "metrics",
  "read_jsonl": "metrics",
  "make_optimizer": "optim",
  "make_schedule": "optim",
  "ema_update": "optim",
  "make_mesh": "sharding",
  "replicated": "sharding",
  "batch_sharding": "sharding",
  "global_batch": "sharding",
  "maybe_initialize": "distributed",
  "is_primary": "distributed",
  "ConfigError": "config",
  "WorkdirLock": "workdir",
  "WorkdirBusyError": "workdir",
  "ConfigChangedError": "workdir",
  "require_finite": "datacheck",
}

__all__ = [
  "CheckpointMismatchError",
  "Checkpointer",
  "ConfigChangedError",
  "ConfigError",
  "Method",
  "MetricWriter",
  "NonFiniteError",
  "TrainResult",
  "TrainState",
  "WorkdirBusyError",
  "WorkdirLock",
  "batch_sharding",
  "ema_update",
  "global_batch",
  "is_primary",
  "make_mesh",
  "make_optimizer",
  "make_schedule",
  "make_step_fn",
  "maybe_initialize",
  "read_jsonl",
  "replicated",
  "require_finite",
  "train",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
