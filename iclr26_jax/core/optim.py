"""Optax chains from ``config.optim`` (clipping, schedule, weight decay) and EMA helpers.

The fields of ``optim_defaults()``: docs/runs.md ("Configuration and logged metrics").
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_collections
import optax


def optim_defaults() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.name = "adam"  # "adam" | "adamw" | "sgd"
  c.learning_rate = 1e-3  # peak learning rate
  c.schedule = "constant"  # "constant" | "cosine" | "warmup_cosine"
  c.warmup_steps = 0  # linear warm-up steps (warmup_cosine)
  c.decay_steps = 0  # cosine decay length; 0 = the run's num_steps
  c.end_lr_factor = 0.0  # final LR as a fraction of the peak (cosine schedules)
  c.weight_decay = 0.0  # decoupled weight decay (adamw)
  c.b1 = 0.9
  c.b2 = 0.999
  c.eps = 1e-8
  c.momentum = 0.0  # sgd momentum
  c.grad_clip = 0.0  # clip by global norm; 0 disables
  return c


def make_schedule(cfg: ml_collections.ConfigDict, num_steps: int) -> optax.Schedule:
  """The learning-rate schedule named by ``cfg.schedule``."""
  lr = cfg.learning_rate
  decay = cfg.decay_steps or num_steps
  if cfg.schedule == "constant":
    return optax.constant_schedule(lr)
  if cfg.schedule == "cosine":
    return optax.cosine_decay_schedule(lr, max(decay, 1), alpha=cfg.end_lr_factor)
  if cfg.schedule == "warmup_cosine":
    return optax.warmup_cosine_decay_schedule(
      0.0, lr, cfg.warmup_steps, max(decay, cfg.warmup_steps + 1), lr * cfg.end_lr_factor
    )
  raise ValueError(f"optim.schedule must be constant|cosine|warmup_cosine; got {cfg.schedule!r}")


def make_optimizer(
  cfg: ml_collections.ConfigDict, num_steps: int, schedule: optax.Schedule | None = None
) -> optax.GradientTransformation:
  """clip → optimizer with schedule, as one optax chain.

  Args:
    cfg: ``optim_defaults()``-shaped config (the run's ``config.optim``).
    num_steps: the run's optimiser steps (the default decay length).
    schedule: a method package's own learning-rate schedule (e.g. lmKAN's two-phase recipe), used
      instead of ``cfg.schedule``; it must peak at ``cfg.learning_rate`` (the method builds it from
      there).
  """
  sched = make_schedule(cfg, num_steps) if schedule is None else schedule
  if cfg.name == "adam":
    opt = optax.adam(sched, b1=cfg.b1, b2=cfg.b2, eps=cfg.eps)
  elif cfg.name == "adamw":
    opt = optax.adamw(sched, b1=cfg.b1, b2=cfg.b2, eps=cfg.eps, weight_decay=cfg.weight_decay)
  elif cfg.name == "sgd":
    opt = optax.sgd(sched, momentum=cfg.momentum or None)
  else:
    raise ValueError(f"optim.name must be adam|adamw|sgd; got {cfg.name!r}")
  parts = []
  if cfg.grad_clip and cfg.grad_clip > 0:
    parts.append(optax.clip_by_global_norm(cfg.grad_clip))
  parts.append(opt)
  return optax.chain(*parts)


def ema_warmup_decay(decay, count):
  """torch_ema's warm-up decay ``min(decay, (1 + n) / (10 + n))`` for the n-th update (n >= 1).

  ``n`` counts the updates of this EMA including the current one (torch_ema increments its
  ``num_updates`` before using it), so the first update uses 2/11 and the EMA forgets its
  initial value quickly; after ~10/(1-decay) updates the plain ``decay`` takes over.

  Args:
    decay: the target decay in [0, 1) (float or traced scalar).
    count: n >= 1, int or traced integer scalar.

  Returns:
    float32 scalar decay.
  """
  n = jnp.asarray(count, jnp.float32)
  return jnp.minimum(jnp.asarray(decay, jnp.float32), (1.0 + n) / (10.0 + n))


def ema_update(ema_params, params, decay: float, count=None):
  """``ema ← d·ema + (1−d)·params`` (optax.incremental_update with step 1−d).

  Without ``count``, d = ``decay`` (a plain EMA / Polyak target update). With ``count`` (the
  1-based number of this update, traced or static), d = ``ema_warmup_decay(decay, count)``, the
  torch_ema warm-up the DSB (CSBM / α-CSBM) reference uses.

  Args:
    ema_params: pytree of EMA parameters.
    params: pytree of the same structure, the current parameters.
    decay: decay in [0, 1).
    count: optional update count n >= 1 for the warm-up.

  Returns:
    the updated EMA pytree.
  """
  if count is None:
    return optax.incremental_update(params, ema_params, step_size=1.0 - decay)
  d = ema_warmup_decay(decay, count)
  return jax.tree.map(lambda e, p: (d * e + (1.0 - d) * p).astype(e.dtype), ema_params, params)
