"""Checkpoints: the one path, through an Orbax ``CheckpointManager``.

Saves are atomic (Orbax writes to a temporary directory and renames), old checkpoints are
pruned to ``keep``, and restore takes an abstract target carrying the *target* shardings, so a
state saved on one mesh restores onto another (saved on 4 devices, restored on 2). When the
newest checkpoint cannot be read (truncated or corrupt files), restore warns, moves it aside
to ``<dir>/corrupt/<step>`` and falls back to the previous one; the run is never lost to one
bad save.
"""

from __future__ import annotations

import os
import shutil
import time
from typing import Any

from absl import logging
import jax
from jax.experimental import multihost_utils
import orbax.checkpoint as ocp


def abstract_like(tree: Any, shardings: Any | None = None) -> Any:
  """``ShapeDtypeStruct`` leaves (with ``shardings`` when given) for an Orbax restore target."""
  if shardings is None:
    return jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=getattr(x, "sharding", None)),
        tree)
  return jax.tree.map(lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s),
                      tree, shardings)


class Checkpointer:
  """Keep-N, atomic Orbax checkpoints of a pytree under ``directory``.

  Args:
    directory: where checkpoints live (created if missing); one sub-directory per step.
    keep: how many of the newest checkpoints to keep.
    async_save: write in a background thread (call ``wait()`` before reading them).
  """

  def __init__(self, directory: str, keep: int = 3, async_save: bool = True):
    if keep < 1:
      raise ValueError(f"keep must be >= 1; got {keep}")
    self.directory = os.path.abspath(directory)
    self._keep = keep
    self._async = async_save
    self._open()

  def _open(self):
    options = ocp.CheckpointManagerOptions(
        max_to_keep=self._keep, create=True, enable_async_checkpointing=self._async)
    self._mgr = ocp.CheckpointManager(self.directory, options=options)

  def steps(self) -> list[int]:
    """Steps with a finished checkpoint, ascending."""
    return sorted(self._mgr.all_steps())

  def latest_step(self) -> int | None:
    steps = self.steps()
    return steps[-1] if steps else None

  def save(self, step: int, tree: Any, force: bool = True) -> None:
    """Saves ``tree`` (a pytree of arrays) as ``step``; atomic, keeps the newest ``keep``."""
    self._mgr.save(int(step), args=ocp.args.StandardSave(tree), force=force)

  def wait(self) -> None:
    """Blocks until pending asynchronous saves are on disk."""
    self._mgr.wait_until_finished()

  def _quarantine(self, step: int) -> None:
    """Moves a bad checkpoint out of the manager's sight (process 0 only)."""
    if jax.process_index() == 0:
      src = os.path.join(self.directory, str(step))
      dst_dir = os.path.join(self.directory, "corrupt")
      os.makedirs(dst_dir, exist_ok=True)
      dst = os.path.join(dst_dir, f"{step}.{int(time.time())}")
      if os.path.exists(src):
        shutil.move(src, dst)
    if jax.process_count() > 1:
      multihost_utils.sync_global_devices(f"ckpt_quarantine_{step}")
    self._mgr.close()
    self._open()

  def restore(self, target: Any, step: int | None = None) -> tuple[int, Any] | None:
    """Restores the newest readable checkpoint onto ``target``'s shapes and shardings.

    Args:
      target: pytree of ``jax.ShapeDtypeStruct`` (see ``abstract_like``) or arrays.
      step: a specific step; None = newest readable, falling back past unreadable ones.
    Returns:
      ``(step, tree)``, or None when there is no checkpoint.
    """
    self.wait()
    target = jax.tree.map(
        lambda x: x if isinstance(x, jax.ShapeDtypeStruct) else abstract_like(x), target)
    candidates = [step] if step is not None else list(reversed(self.steps()))
    for s in candidates:
      try:
        tree = self._mgr.restore(s, args=ocp.args.StandardRestore(target))
        return s, tree
      except Exception as e:  # noqa: BLE001 — any read failure means this step is unusable.
        if step is not None:
          raise
        msg = (f"checkpoint step {s} in {self.directory} is unreadable "
               f"({type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}); "
               "moving it to corrupt/ and falling back to the previous one")
        logging.warning(msg)
        print("WARNING: " + msg, flush=True)
        self._quarantine(s)
    return None

  def close(self) -> None:
    self.wait()
    self._mgr.close()
