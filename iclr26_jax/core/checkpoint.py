"""Checkpoints: the one path, through an Orbax ``CheckpointManager``.

``Checkpointer`` writes keep-N, atomic checkpoints with a digest of every array leaf
(``tree_digest``, the same for any sharding) and restores onto the target's shardings, so a state
saved on one mesh restores onto another. Restore verifies what it read: an unreadable or damaged
newest checkpoint is moved to ``<dir>/corrupt/`` with one warning line and the previous one is
used; a tree that differs from the target raises ``CheckpointMismatchError``; when no checkpoint
verifies, ``CheckpointCorruptError``. A failed save raises ``CheckpointSaveError``. Helpers:
``structure``, ``structure_diff``, ``digest_diff``, ``abstract_like``, ``tree_nbytes``.

The digest, its two copies and the fallback rules: docs/runs.md ("How a run is kept safe").
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging as std_logging
import os
import shutil
import sys
import time
import warnings
from typing import Any

from absl import logging
import jax
from jax.experimental import multihost_utils
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp


class CheckpointMismatchError(ValueError):
  """A readable checkpoint does not match the restore target's tree (paths, shapes, dtypes)."""


class CheckpointCorruptError(RuntimeError):
  """No checkpoint verifies against its digest; nothing was moved or deleted."""


def step_folders(directory: str) -> list[int]:
  """The finished step folders in a checkpoint ``directory``, ascending, read from the file system
  alone (Orbax's unfinished folders have non-numeric names); ``[]`` when there is none."""
  names = os.listdir(directory) if os.path.isdir(directory) else []
  return sorted(int(n) for n in names if n.isdigit() and os.path.isdir(os.path.join(directory, n)))


class CheckpointSaveError(OSError):
  """A checkpoint could not be written (disk full, I/O error); earlier checkpoints are intact."""


DIGEST_KEY = "iclr26_digest"  # custom_metadata key: {leaf path: [sum1, sum2]}
DIGEST_DIR = "digests"  # <dir>/digests/<step>.json: the second copy of each step's digests
DIGEST_MARKER = "WRITES_DIGESTS"  # <dir>/digests/WRITES_DIGESTS: this directory writes digests
_TMP_MARK = ".orbax-checkpoint-tmp"  # Orbax's in-progress folder suffix


class _QuietOrbaxErrors(std_logging.Filter):
  """Drops Orbax's and TensorStore's WARNING and ERROR records (a failure is logged once per writer
  thread, with tracebacks): ``Checkpointer`` reports each failure in one line carrying its cause."""

  def filter(self, record: std_logging.LogRecord) -> bool:
    if record.levelno < std_logging.WARNING:
      return True
    return "orbax" not in record.pathname and "tensorstore" not in record.pathname


def _drop_orbax_coroutine_errors(previous):
  """An unraisable-exception hook that drops the errors of Orbax's abandoned coroutines (the
  failure itself is reported by ``Checkpointer``) and passes everything else to ``previous``."""

  def hook(unraisable):
    code = getattr(unraisable.object, "cr_code", None)
    if code is not None and f"{os.sep}orbax{os.sep}" in code.co_filename:
      return
    previous(unraisable)

  hook._drops_orbax_coroutines = True
  return hook


def _quiet_orbax_errors() -> None:
  """Installs the filter above, and the tolerant event-loop policy (below) for good when the
  process still has asyncio's default policy: Orbax's background save threads make their loops
  after ``save`` returns, and a failed write would print a traceback per TensorStore callback."""
  logger = logging.get_absl_logger()
  if not any(isinstance(f, _QuietOrbaxErrors) for f in logger.filters):
    logger.addFilter(_QuietOrbaxErrors())
  # A failed write or read abandons Orbax's pending coroutines; Python would warn about each.
  warnings.filterwarnings(
    "ignore", message=r"coroutine '.*' was never awaited", category=RuntimeWarning
  )
  # A failed read leaves per-array read coroutines holding their error, printed when collected.
  if not getattr(sys.unraisablehook, "_drops_orbax_coroutines", False):
    sys.unraisablehook = _drop_orbax_coroutine_errors(sys.unraisablehook)
  if (
    sys.platform != "win32"
    and type(asyncio.get_event_loop_policy()) is asyncio.DefaultEventLoopPolicy
  ):
    asyncio.set_event_loop_policy(_TolerantPolicy())


def _words(x: jax.Array) -> jax.Array:
  """The bit pattern of ``x`` as uint32 words (shape ``x.shape`` or ``x.shape + (r,)``)."""
  if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
    x = jax.random.key_data(x)
  if x.dtype == jnp.bool_:
    return x.astype(jnp.uint32)
  size = np.dtype(x.dtype).itemsize
  if size == 4:
    return jax.lax.bitcast_convert_type(x, jnp.uint32)
  if size < 4:
    unsigned = {1: jnp.uint8, 2: jnp.uint16}[size]
    return jax.lax.bitcast_convert_type(x, unsigned).astype(jnp.uint32)
  return jax.lax.bitcast_convert_type(x, jnp.uint32)  # 8 bytes -> trailing axis of 2 words


def _leaf_digest(x: jax.Array) -> jax.Array:
  """``uint32[2]``: sum_i w_i * (2 i k1 + 1) and sum_i rotl(w_i, 13) * (2 i k2 + 1), mod 2**32,
  with ``i`` the word's row-major index (computed per axis: no reshape, so no resharding)."""
  w = _words(x)
  idx = jnp.zeros(w.shape, jnp.uint32)
  stride = 1
  for axis in reversed(range(w.ndim)):
    idx = idx + jax.lax.broadcasted_iota(jnp.uint32, w.shape, axis) * jnp.uint32(stride % 2**32)
    stride *= w.shape[axis]
  two_i = idx * jnp.uint32(2)
  m1 = two_i * jnp.uint32(0x9E3779B1) + jnp.uint32(1)
  m2 = two_i * jnp.uint32(0x85EBCA77) + jnp.uint32(1)
  rot = (w << jnp.uint32(13)) | (w >> jnp.uint32(19))
  return jnp.stack([jnp.sum(w * m1, dtype=jnp.uint32), jnp.sum(rot * m2, dtype=jnp.uint32)])


@jax.jit
def _digest_leaves(leaves):
  return [_leaf_digest(x) for x in leaves]


def tree_digest(tree: Any) -> dict[str, list[int]]:
  """``{leaf path: [sum1, sum2]}`` of a pytree of arrays (``_leaf_digest`` of each leaf); the
  same for any sharding of the same values, since integer sums mod 2**32 do not depend on the
  reduction order. One jitted pass over the tree on its devices."""
  paths_leaves = jax.tree_util.tree_leaves_with_path(tree)
  groups: dict[Any, list[int]] = {}  # one jitted call per device set (jit wants one)
  for i, (_, leaf) in enumerate(paths_leaves):
    sharding = getattr(leaf, "sharding", None)
    devices = frozenset(d.id for d in sharding.device_set) if sharding is not None else None
    groups.setdefault(devices, []).append(i)
  sums: list[Any] = [None] * len(paths_leaves)
  for idx in groups.values():
    for i, d in zip(idx, _digest_leaves([paths_leaves[i][1] for i in idx])):
      sums[i] = d
  sums = jax.device_get(sums)
  return {_path_str(p): [int(v) for v in np.asarray(d)] for (p, _), d in zip(paths_leaves, sums)}


def digest_diff(stored: dict, actual: dict, limit: int = 3) -> list[str]:
  """Leaf paths whose digests differ (at most ``limit`` named)."""
  bad = sorted(k for k in set(stored) | set(actual) if stored.get(k) != actual.get(k))
  if len(bad) > limit:
    bad = bad[:limit] + [f"... {len(bad) - limit} more"]
  return bad


def tree_nbytes(tree: Any) -> int:
  """Global bytes of a pytree of arrays (what a checkpoint of it writes, before compression)."""
  total = 0
  for leaf in jax.tree.leaves(tree):
    if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
      leaf = jax.random.key_data(leaf)
    total += int(np.prod(leaf.shape)) * np.dtype(leaf.dtype).itemsize
  return total


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

  Orbax closes its restore loop when the first read fails; TensorStore reads still in flight then
  call ``call_soon_threadsafe`` on it ("Event loop is closed"). Nothing waits for their results,
  so dropping the wake-up is the correct outcome.
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


def _atomic_write(path: str, text: str) -> None:
  """Writes ``text`` to ``path`` through a temporary file and a rename (never half written)."""
  tmp = f"{path}.tmp{os.getpid()}"
  try:
    with open(tmp, "w") as f:
      f.write(text)
      f.flush()
      os.fsync(f.fileno())
    os.replace(tmp, path)
  except OSError:
    with contextlib.suppress(OSError):
      os.remove(tmp)
    raise


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
    _quiet_orbax_errors()
    options = ocp.CheckpointManagerOptions(
      preservation_policy=ocp.checkpoint_managers.LatestN(n=self._keep),
      create=True,
      enable_async_checkpointing=self._async,
    )
    # The handler is named so that ``item_metadata`` works before any save or restore.
    self._mgr = ocp.CheckpointManager(
      self.directory, options=options, item_handlers=ocp.StandardCheckpointHandler()
    )
    self.quarantined: list[int] = []  # steps moved to corrupt/ by restore, in order
    self._pending: int | None = None  # step of a save that may still be in flight

  def steps(self) -> list[int]:
    """Steps with a finished checkpoint, ascending."""
    return sorted(self._mgr.all_steps())

  def latest_step(self) -> int | None:
    steps = self.steps()
    return steps[-1] if steps else None

  def save(self, step: int, tree: Any, force: bool = True) -> None:
    """Saves ``tree`` (a pytree of arrays) as ``step``; atomic, keeps the newest ``keep``.

    The leaves' digests (``tree_digest``) go into the step's metadata. Raises
    ``CheckpointSaveError`` when the directory lacks the space for the state's bytes (plus 10 %)
    or an earlier background save failed; nothing of this step is written then.
    """
    self.poll()
    if self._pending is not None:
      self.wait()  # a failure of the previous save is named with its own step, not this one
    need = int(tree_nbytes(tree) * 1.1) + (1 << 20)
    try:
      free = shutil.disk_usage(self.directory).free
    except OSError:
      free = None  # remote storage without statvfs: let the write tell
    if free is not None and free < need:
      raise CheckpointSaveError(
        f"not enough free space to save checkpoint step {step} in {self.directory}: about "
        f"{need / 2**20:.1f} MiB needed, {free / 2**20:.1f} MiB free; the checkpoints saved "
        "before are intact; free space and run the same command to resume"
      )
    digest = tree_digest(tree)
    self._write_digest(int(step), digest)
    self._pending = int(step)
    try:
      self._mgr.save(
        int(step),
        args=ocp.args.StandardSave(tree),
        force=force,
        custom_metadata={DIGEST_KEY: digest},
      )
    except Exception as e:  # noqa: BLE001 — a synchronous failure (directory creation, a full disk)
      self._save_failed(e)
    if not self._async:
      self._pending = None

  def poll(self) -> None:
    """Raises ``CheckpointSaveError`` if the last background save has failed (cheap while it is
    still writing; call it each step). Orbax's finalize thread consumes the writer's exception,
    so a finished save is checked by waiting on it (returns at once) and by its step folder."""
    if self._pending is None:
      return
    try:
      self._mgr.check_for_errors()
    except Exception as e:  # noqa: BLE001 — whatever the writer raised, the save is lost
      self._save_failed(e)
    if not self._mgr.is_saving_in_progress():
      self.wait()

  def wait(self) -> None:
    """Blocks until pending asynchronous saves are on disk.

    Raises ``CheckpointSaveError`` when one failed (its temporary folder removed)."""
    try:
      self._mgr.wait_until_finished()
      self._mgr.check_for_errors()
    except Exception as e:  # noqa: BLE001
      if self._pending is None:
        return  # a failure already reported (Orbax raises it again on every later call)
      self._save_failed(e)
    step = self._pending
    if step is not None and jax.process_index() == 0:
      if not os.path.isdir(os.path.join(self.directory, str(step))):
        self._save_failed(RuntimeError("the save ended without its step folder"))
    self._pending = None
    self._prune_digests()

  def _save_failed(self, error: Exception) -> None:
    step, self._pending = self._pending, None
    removed = self.remove_temporary()
    first = str(error).splitlines()[0][:300] if str(error) else ""
    extra = f"; removed {len(removed)} temporary folder(s)" if removed else ""
    on_disk = self.steps_on_disk()
    kept = (
      f"the checkpoints saved before are intact (steps {on_disk})"
      if on_disk
      else "no checkpoint was saved before it"
    )
    raise CheckpointSaveError(
      f"saving checkpoint step {step} to {self.directory} failed ({type(error).__name__}: "
      f"{first}){extra}; {kept}"
    ) from error

  def remove_temporary(self) -> list[str]:
    """Deletes Orbax's unfinished step folders (process 0); returns their paths."""
    if jax.process_index() != 0 or not os.path.isdir(self.directory):
      return []
    removed = []
    for name in os.listdir(self.directory):
      if _TMP_MARK in name:
        path = os.path.join(self.directory, name)
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.exists(path):  # a writer still running can recreate files in it
          removed.append(path)
    return removed

  # -- digests in two places ---------------------------------------------------------------

  def _digest_dir(self) -> str:
    return os.path.join(self.directory, DIGEST_DIR)

  def _digest_path(self, step: int) -> str:
    return os.path.join(self._digest_dir(), f"{int(step)}.json")

  def _write_digest(self, step: int, digest: dict) -> None:
    """Writes ``digests/<step>.json`` (and the marker, once) atomically, process 0 only.

    Raises ``CheckpointSaveError`` when it cannot be written (nothing of the step is saved)."""
    if jax.process_index() != 0:
      return
    try:
      os.makedirs(self._digest_dir(), exist_ok=True)
      first = self._first_digest_step()
      if first is None or first > step:
        marker = os.path.join(self._digest_dir(), DIGEST_MARKER)
        _atomic_write(marker, json.dumps({"format": 1, "first_step": int(step)}) + "\n")
      _atomic_write(self._digest_path(step), json.dumps({"step": int(step), "digest": digest}))
    except OSError as e:
      raise CheckpointSaveError(
        f"saving checkpoint step {step} to {self.directory} failed (cannot write its digest "
        f"file: {e.strerror or e}); the checkpoints saved before are intact (steps "
        f"{self.steps()}); free space and run the same command to resume"
      ) from e

  def _prune_digests(self) -> None:
    """Removes digest files of steps no longer kept (process 0; failures are ignored)."""
    if jax.process_index() != 0 or not os.path.isdir(self._digest_dir()):
      return
    keep = set(self.steps())
    if self._pending is not None:
      keep.add(self._pending)
    for name in os.listdir(self._digest_dir()):
      stem, dot, ext = name.partition(".")
      if stem.isdigit() and ext == "json" and int(stem) not in keep:
        with contextlib.suppress(OSError):
          os.remove(os.path.join(self._digest_dir(), name))

  def _first_digest_step(self) -> int | None:
    """The marker's first step saved with digests (None when it is missing or unreadable)."""
    try:
      with open(os.path.join(self._digest_dir(), DIGEST_MARKER)) as f:
        first = json.load(f).get("first_step")
    except (OSError, ValueError, AttributeError):
      return None
    return first if isinstance(first, int) else None

  def writes_digests(self) -> bool:
    """Whether this directory has written digests: its marker or a digest file exists, or a
    step's metadata holds digests. Then a step without a readable digest is damaged."""
    d = self._digest_dir()
    if os.path.isdir(d) and os.listdir(d):
      return True
    return any(self._meta_digest(s) is not None for s in self.steps())

  def _meta_digest(self, step: int) -> dict | None:
    try:
      with _tolerant_event_loops():
        meta = self._mgr.metadata(int(step))
      custom = getattr(meta, "custom_metadata", None) or {}
      d = custom.get(DIGEST_KEY)
    except Exception:  # noqa: BLE001 — unreadable step metadata: no digest from there
      return None
    return d if isinstance(d, dict) and d else None

  def _file_digest(self, step: int) -> dict | None:
    try:
      with open(self._digest_path(step)) as f:
        rec = json.load(f)
    except (OSError, ValueError):
      return None
    if not isinstance(rec, dict) or rec.get("step") != int(step):
      return None
    d = rec.get("digest")
    return d if isinstance(d, dict) and d else None

  def stored_digests(self, step: int) -> dict[str, dict]:
    """``{"metadata": digest, "file": digest}`` for the readable copies of ``step``'s digests."""
    out = {}
    for where, d in (("metadata", self._meta_digest(step)), ("file", self._file_digest(step))):
      if d is not None:
        out[where] = d
    return out

  def stored_digest(self, step: int) -> dict[str, list[int]] | None:
    """A readable copy of the digests written with ``step`` (None when neither is readable)."""
    copies = self.stored_digests(step)
    return copies.get("metadata", copies.get("file"))

  def check_digest(self, step: int, actual: dict, writes: bool | None = None) -> str | None:
    """Why ``step``'s arrays (their ``tree_digest`` is ``actual``) do not verify, or None.

    Returns ``"unverified"`` for a checkpoint of a directory that never wrote digests.
    Otherwise a damage description: no readable digest in either place, or leaves whose digest
    differs from a readable copy."""
    copies = self.stored_digests(step)
    if not copies:
      if writes is None:
        writes = self.writes_digests()
      first = self._first_digest_step()
      if not writes or (first is not None and step < first):
        return "unverified"  # written before this directory wrote digests
      return (
        f"no readable digest (its _CHECKPOINT_METADATA and {DIGEST_DIR}/{step}.json are missing "
        "or damaged, in a directory that writes digests)"
      )
    for where, d in copies.items():
      bad = digest_diff(d, actual)
      if bad:
        return f"digest mismatch in {', '.join(bad)}" + (
          f" (against its {where} copy)" if len(copies) > 1 else ""
        )
    return None

  def _quarantine(self, step: int) -> None:
    """Moves a bad checkpoint out of the manager's sight (process 0 only)."""
    if jax.process_index() == 0:
      src = os.path.join(self.directory, str(step))
      dst_dir = os.path.join(self.directory, "corrupt")
      os.makedirs(dst_dir, exist_ok=True)
      dst = os.path.join(dst_dir, f"{step}.{int(time.time())}")
      if os.path.exists(src):
        shutil.move(src, dst)
        if os.path.exists(self._digest_path(step)):  # its digest goes along, for inspection
          with contextlib.suppress(OSError):
            shutil.move(self._digest_path(step), os.path.join(dst, "digest.json"))
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
    writes = self.writes_digests()
    failed: list[tuple[int, str]] = []  # (step, why) of checkpoints that did not verify
    moved: list[int] = []  # unreadable steps moved to corrupt/ by this call
    for s in candidates:
      try:
        saved = self.structure(s)
      except Exception as e:  # noqa: BLE001 — unreadable metadata: this step is unusable.
        if step is not None:
          raise
        self._give_up(s, e)
        moved.append(s)
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
      except Exception as e:  # noqa: BLE001 — any read failure means this step is unusable.
        if step is not None:
          raise
        self._give_up(s, e)
        moved.append(s)
        continue
      why = self.check_digest(s, tree_digest(tree), writes)
      if why is not None and why != "unverified":
        if step is not None:
          raise CheckpointCorruptError(f"checkpoint step {s} in {self.directory} fails: {why}")
        failed.append((s, why))
        continue
      for f, reason in failed:  # a good one exists: the damaged newer ones go to corrupt/
        self._give_up(f, ValueError(reason), what="damaged")
      return s, tree
    if failed:
      names = "; ".join(f"step {f}: {why}" for f, why in failed)
      what = (
        f"the checkpoints that fail their digest were not moved or deleted (unreadable step(s) "
        f"{moved} were moved to corrupt/)"
        if moved
        else "Nothing was moved or deleted"
      )
      raise CheckpointCorruptError(
        f"no checkpoint in {self.directory} verifies against its digest ({names}): the stored "
        f"arrays or their digests were altered after they were written (disk or copy damage). "
        f"{what}; inspect with `python -m experiments.ckpt` and restore a copy, or use another "
        "--workdir"
      )
    return None

  def _give_up(self, step: int, error: Exception, what: str = "unreadable") -> None:
    """One warning line for an unreadable (or damaged) checkpoint, then moves it to ``corrupt/``."""
    first = str(error).splitlines()[0][:200] if str(error) else ""
    msg = (
      f"checkpoint step {step} in {self.directory} is {what} "
      f"({type(error).__name__}: {first}); moved to corrupt/, "
      "falling back to the previous one"
    )
    logging.info(msg)
    if jax.process_index() == 0:
      print("WARNING: " + msg, file=sys.stderr, flush=True)
    self._quarantine(step)
    self.quarantined.append(step)

  def steps_on_disk(self) -> list[int]:
    """Steps whose folder is on disk, ascending (Orbax's list can still hold a step that failed
    or was abandoned)."""
    folders = set(step_folders(self.directory))
    return [s for s in self.steps() if s in folders]

  def close(self, settle: bool = False) -> None:
    """Waits for a pending save (raising ``CheckpointSaveError`` if it failed), then closes.

    ``settle=True`` (the run is already stopping on an exception, e.g. a second Ctrl-C) lets the
    save finish or fail without raising; a failed save's temporary folder is removed all the
    same, and ``steps_on_disk`` then says what is there."""
    try:
      if settle:
        with contextlib.suppress(CheckpointSaveError):
          self.wait()
      else:
        self.wait()
    finally:
      with contextlib.suppress(Exception):  # Orbax re-raises a failed save's error here too
        self._mgr.close()
