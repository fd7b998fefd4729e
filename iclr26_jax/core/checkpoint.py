"""Checkpoints: the one path, through an Orbax ``CheckpointManager``.

Saves are atomic (Orbax writes to a temporary directory and renames), old checkpoints are
pruned to ``keep``, and restore takes an abstract target carrying the *target* shardings, so a
state saved on one mesh restores onto another (saved on 4 devices, restored on 2). When the
newest checkpoint cannot be read (truncated or corrupt files), restore warns in one line, moves
it aside to ``<dir>/corrupt/<step>`` and falls back to the previous one; the run is never lost
to one bad save. A readable checkpoint whose tree (leaf paths, shapes, dtypes) differs from the
restore target is *not* corrupt: restore raises ``CheckpointMismatchError`` and moves nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import time
from typing import Any

from absl import logging
import jax
from jax.experimental import multihost_utils
import numpy as np
import orbax.checkpoint as ocp


class CheckpointMismatchError(ValueError):
  """A readable checkpoint does not match the restore target's tree (paths, shapes, dtypes)."""


def _path_str(path) -> str:
  """``('params', 'Dense_0', 'kernel')`` style key path, the same for dicts, tuples and
  namedtuples (Orbax's metadata stores namedtuples as dicts and tuples as lists)."""
  parts = []
  for k in path:
    for attr in ("key", "idx", "name"):
      if hasattr(k, attr):
        parts.append(str(getattr(k, attr)))
        break
    else:
      parts.append(str(k))
  return "/".join(parts)


def structure(tree: Any) -> dict[str, tuple[tuple[int, ...], str]]:
  """``{leaf path: (shape, dtype name)}`` of a pytree of arrays, ``ShapeDtypeStruct``s or
  Orbax ``ArrayMetadata``; two trees restore onto each other iff these are equal."""
  out = {}
  for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
    shape = tuple(int(d) for d in getattr(leaf, "shape", ()))
    dtype = getattr(leaf, "dtype", None)
    out[_path_str(path)] = (shape, _dtype_name(dtype) if dtype is not None else type(leaf).__name__)
  return out


def _dtype_name(dtype) -> str:
  try:
    return np.dtype(dtype).name
  except TypeError:  # extended dtypes (typed PRNG keys)
    return str(dtype)


def structure_diff(saved: dict, target: dict, limit: int = 5) -> list[str]:
  """Human-readable differences between two ``structure`` dicts (at most ``limit`` lines)."""
  lines = []
  for k in sorted(set(saved) | set(target)):
    if k not in target:
      lines.append(f"{k} only in the checkpoint")
    elif k not in saved:
      lines.append(f"{k} only in the new state")
    elif saved[k] != target[k]:
      (s1, d1), (s2, d2) = saved[k], target[k]
      lines.append(f"{k}: checkpoint {d1}{list(s1)} vs new {d2}{list(s2)}")
  if len(lines) > limit:
    lines = lines[:limit] + [f"... {len(lines) - limit} more"]
  return lines


class _TolerantEventLoop(asyncio.SelectorEventLoop):
  """An event loop whose ``call_soon_threadsafe`` is a no-op once the loop is closed.

  Orbax restores through ``loop.run_until_complete(...)`` on a fresh loop and closes it when
  the first read fails; TensorStore reads still in flight then complete on their own threads
  and call ``call_soon_threadsafe`` on the closed loop, which raises and prints one
  ``RuntimeError: Event loop is closed`` traceback per read. Nothing waits for those results
  any more, so dropping the wake-up is the correct outcome.
  """

  def call_soon_threadsafe(self, callback, *args, context=None):
    if self.is_closed():
      return None
    try:
      return super().call_soon_threadsafe(callback, *args, context=context)
    except RuntimeError:
      if self.is_closed():
        return None
      raise


class _TolerantPolicy(asyncio.DefaultEventLoopPolicy):
  def new_event_loop(self):
    return _TolerantEventLoop()


@contextlib.contextmanager
def _tolerant_event_loops():
  """New event loops made inside are ``_TolerantEventLoop``s (the previous policy is restored;
  loops already made keep their class, so late completions stay silent)."""
  if sys.platform == "win32":  # the selector loop is not the default there; leave it alone
    yield
    return
  previous = asyncio.get_event_loop_policy()
  asyncio.set_event_loop_policy(_TolerantPolicy())
  try:
    yield
  finally:
    asyncio.set_event_loop_policy(previous)


def abstract_like(tree: Any, shardings: Any | None = None) -> Any:
  """``ShapeDtypeStruct`` leaves (with ``shardings`` when given) for an Orbax restore target."""
  if shardings is None:
    return jax.tree.map(
      lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=getattr(x, "sharding", None)), tree
    )
  return jax.tree.map(
    lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s), tree, shardings
  )


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
      max_to_keep=self._keep, create=True, enable_async_checkpointing=self._async
    )
    # The handler is named so that ``item_metadata`` works before any save or restore.
    self._mgr = ocp.CheckpointManager(
      self.directory, options=options, item_handlers=ocp.StandardCheckpointHandler()
    )
    self.quarantined: list[int] = []  # steps moved to corrupt/ by restore, in order

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

  def structure(self, step: int) -> dict[str, tuple[tuple[int, ...], str]]:
    """The saved tree of ``step`` as ``structure`` (from Orbax metadata; reads no array data).

    Raises whatever Orbax raises when the metadata is unreadable.
    """
    with _tolerant_event_loops():
      meta = self._mgr.item_metadata(int(step))
    if meta is None:
      raise ValueError(f"checkpoint step {step} in {self.directory} has no readable metadata")
    return structure(meta)

  def restore(self, target: Any, step: int | None = None) -> tuple[int, Any] | None:
    """Restores the newest readable checkpoint onto ``target``'s shapes and shardings.

    Args:
      target: pytree of ``jax.ShapeDtypeStruct`` (see ``abstract_like``) or arrays.
      step: a specific step; None = newest readable, falling back past unreadable ones
        (each moved to ``corrupt/`` with a one-line warning; see ``quarantined``).
    Returns:
      ``(step, tree)``, or None when there is no (readable) checkpoint.
    Raises:
      CheckpointMismatchError: a readable checkpoint's tree differs from ``target``'s; nothing
        is moved (the checkpoint belongs to a run with another config or code version).
    """
    self.wait()
    target = jax.tree.map(
      lambda x: x if isinstance(x, jax.ShapeDtypeStruct) else abstract_like(x), target
    )
    want = structure(target)
    candidates = [step] if step is not None else list(reversed(self.steps()))
    for s in candidates:
      try:
        saved = self.structure(s)
      except Exception as e:  # noqa: BLE001 — unreadable metadata: this step is unusable.
        if step is not None:
          raise
        self._give_up(s, e)
        continue
      diff = structure_diff(saved, want)
      if diff:
        raise CheckpointMismatchError(
          f"checkpoint step {s} in {self.directory} does not match the state being restored "
          f"(it was written by a run with another structure): {'; '.join(diff)}"
        )
      try:
        with _tolerant_event_loops():
          tree = self._mgr.restore(s, args=ocp.args.StandardRestore(target))
        return s, tree
      except Exception as e:  # noqa: BLE001 — any read failure means this step is unusable.
        if step is not None:
          raise
        self._give_up(s, e)
    return None

  def _give_up(self, step: int, error: Exception) -> None:
    """One warning line for an unreadable checkpoint, then moves it to ``corrupt/``."""
    first = str(error).splitlines()[0][:200] if str(error) else ""
    msg = (
      f"checkpoint step {step} in {self.directory} is unreadable "
      f"({type(error).__name__}: {first}); moved to corrupt/, "
      "falling back to the previous one"
    )
    logging.info(msg)
    if jax.process_index() == 0:
      print("WARNING: " + msg, file=sys.stderr, flush=True)
    self._quarantine(step)
    self.quarantined.append(step)

  def close(self) -> None:
    self.wait()
    self._mgr.close()
