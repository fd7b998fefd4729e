"""The training state: one ``flax.struct`` pytree per run.

Array leaves (step, params, opt_state, rng, extras) are checkpointed; the static parts (apply
function, optax transform) are ``pytree_node=False`` and rebuilt from the config on restore.
"""

from __future__ import annotations

import zlib
from typing import Any, Callable

import flax.struct
import jax
import jax.numpy as jnp
import optax


def stream_id(name: str | int) -> int:
  """The integer a named random stream folds into a key: CRC-32 of the UTF-8 name, kept to 31 bits
  (stable across processes, hosts and Python versions, unlike ``hash``); an int is its own id."""
  if isinstance(name, str):
    if not name:
      raise ValueError("a random stream name must be non-empty")
    return zlib.crc32(name.encode("utf-8")) & 0x7FFFFFFF
  return int(name)


def stream_key(key: jax.Array, *names: str | int) -> jax.Array:
  """``key`` folded with each stream name in turn: ``stream_key(k, "online/act")``."""
  for n in names:
    key = jax.random.fold_in(key, stream_id(n))
  return key


def seed_key(seed: int, *names: str | int) -> jax.Array:
  """A key for a stream derived from an integer seed, e.g. the data sampler's
  ``seed_key(config.seed, "data")``: independent of the model's ``PRNGKey(seed)`` streams."""
  return stream_key(jax.random.PRNGKey(int(seed)), *names)


class TrainState(flax.struct.PyTreeNode):
  """Step counter, parameters, optimizer state, root key and method extras.

  Attributes:
    step: int32 scalar, number of updates applied.
    params: parameter pytree.
    opt_state: optax state for ``tx``.
    rng: the run's root key (raw ``uint32[2]``); per-step keys come from ``step_key``.
    extras: method-specific arrays (target networks, EMA params, batch statistics, ...).
    apply_fn: the model's apply function (static).
    tx: the optax transform (static).
  """

  step: jax.Array
  params: Any
  opt_state: Any
  rng: jax.Array
  extras: Any = flax.struct.field(default_factory=dict)
  apply_fn: Callable | None = flax.struct.field(pytree_node=False, default=None)
  tx: optax.GradientTransformation | None = flax.struct.field(pytree_node=False, default=None)

  @classmethod
  def create(cls, *, params, tx, rng, apply_fn=None, extras=None) -> "TrainState":
    """A fresh state at step 0 with ``tx.init(params)``."""
    return cls(
      step=jnp.zeros((), jnp.int32),
      params=params,
      opt_state=tx.init(params),
      rng=jnp.asarray(rng),
      extras={} if extras is None else extras,
      apply_fn=apply_fn,
      tx=tx,
    )

  def step_key(self, *names: str | int) -> jax.Array:
    """The key of this step: ``fold_in(root, step)`` then each stream name in turn
    (``state.step_key("online/act")``; names hash through ``stream_id``, integers fold in as
    they are).

    Deterministic in (root key, step, names), so a resumed run draws the same numbers.
    """
    return stream_key(jax.random.fold_in(self.rng, self.step), *names)

  def apply_gradients(self, grads, **changes) -> tuple["TrainState", jax.Array]:
    """One optimizer step; returns the new state and the gradient global norm."""
    updates, opt_state = self.tx.update(grads, self.opt_state, self.params)
    params = optax.apply_updates(self.params, updates)
    new = self.replace(step=self.step + 1, params=params, opt_state=opt_state, **changes)
    return new, optax.global_norm(grads)

  def arrays(self) -> dict:
    """The checkpointed part: a dict of the array leaves."""
    return {
      "step": self.step,
      "params": self.params,
      "opt_state": self.opt_state,
      "rng": self.rng,
      "extras": self.extras,
    }

  def with_arrays(self, tree: dict) -> "TrainState":
    """This state with its array leaves replaced by ``tree`` (from ``arrays()``)."""
    return self.replace(**tree)
