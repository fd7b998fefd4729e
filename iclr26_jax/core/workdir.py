"""A workdir belongs to one run: an exclusive lock and the run's identity (its config).

``WorkdirLock`` holds ``<workdir>/run.lock`` (the owner's pid, host and start time): a second run
stops at once with ``WorkdirBusyError`` naming the owner; a lock whose owner on this host is gone
is taken over. ``config.json`` is the run's identity: ``config_changes`` compares it with a new
config (dotted keys), ``record_change`` appends an accepted change to ``config_history.jsonl``,
and ``structural_error`` / ``nonstructural_error`` / ``missing_config_error`` build the
``ConfigChangedError`` the trainer raises before anything in the workdir changes.

How the lock is taken and when a resume may go on: docs/runs.md ("How a run is kept safe").
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import time
from typing import Any

LOCK_NAME = "run.lock"
HISTORY_NAME = "config_history.jsonl"

# Keys that may differ between a run and its resume without being a change of the run: the
# display, the metric backends (TensorBoard may be turned on for the rest of a run), and the
# device topology (restoring onto another mesh is a supported feature).
RUNTIME_KEYS = ("progress_bar", "mesh", "param_sharding", "writers")


class WorkdirBusyError(RuntimeError):
  """Another live run holds the workdir's lock."""


class WorkdirWriteError(OSError):
  """The workdir's lock cannot be written (no space or inodes, read-only file system)."""

  def __str__(self) -> str:
    return str(self.strerror)


class ConfigChangedError(ValueError):
  """The new config differs from the run stored in the workdir; nothing was touched."""


def _proc_start_time(pid: int) -> str | None:
  """The kernel's start time of ``pid`` (Linux ``/proc``), to tell a reused pid apart."""
  try:
    with open(f"/proc/{pid}/stat") as f:
      return f.read().rsplit(")", 1)[1].split()[19]
  except (OSError, IndexError):
    return None


def _pid_alive(pid: int) -> bool:
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:
    return True
  except OSError as e:
    return e.errno != errno.ESRCH
  return True


def _owner_alive(info: dict) -> bool | None:
  """True/False for an owner on this host; None when it is on another host (unknown)."""
  if info.get("host") != socket.gethostname():
    return None
  try:
    pid = int(info.get("pid", -1))
  except (TypeError, ValueError):
    return False  # a damaged record on this host: no live owner can be named
  if pid <= 0 or not _pid_alive(pid):
    return False
  started = info.get("proc_start")
  now = _proc_start_time(pid)
  if started is not None and now is not None and started != now:
    return False  # the pid was reused by another process
  return True


class WorkdirLock:
  """Exclusive lock on ``workdir``: ``run.lock``, taken and broken under an ``flock`` on
  ``.run.lock.guard``. Use as a context manager or call ``acquire()`` / ``release()``.

  Raises (from ``acquire``):
    WorkdirBusyError: another live run (or a run on another host) holds the lock.
  """

  def __init__(self, workdir: str):
    self.workdir = os.path.abspath(workdir)
    self.path = os.path.join(self.workdir, LOCK_NAME)
    self.stale_owner: dict | None = None  # set when a stale lock was taken over
    self._info: dict | None = None

  def _read(self) -> dict | None:
    try:
      with open(self.path) as f:
        info = json.load(f)
    except FileNotFoundError:
      return None
    except (OSError, ValueError):
      return {}  # being written or damaged
    return info if isinstance(info, dict) else {}

  def _create(self) -> bool:
    """Takes the lock if free. The owner's record is written to a private temporary file first
    and then hard-linked to ``run.lock`` (``link`` fails if the name exists, like ``O_EXCL``),
    so the lock never exists empty or half written: a full disk fails here, before the lock."""
    pid = os.getpid()
    info = {
      "pid": pid,
      "host": socket.gethostname(),
      "proc_start": _proc_start_time(pid),
      "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
    tmp = f"{self.path}.{socket.gethostname()}.{pid}.tmp"
    try:
      with open(tmp, "w") as f:
        json.dump(info, f)
        f.flush()
        os.fsync(f.fileno())
    except OSError as e:
      with contextlib.suppress(OSError):
        os.remove(tmp)
      raise WorkdirWriteError(
        e.errno,
        f"cannot write the workdir lock {self.path}: {e.strerror}; nothing was started: free "
        "space (or inodes) and run the same command",
      ) from e
    self._info = info  # before the link: an interrupt right after it still releases the lock
    try:
      os.link(tmp, self.path)
    except FileExistsError:
      self._info = None
      return False
    except OSError:  # a file system without hard links (some FUSE mounts): O_EXCL, then write
      try:
        fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
      except FileExistsError:
        self._info = None
        return False
      with os.fdopen(fd, "w") as f:
        json.dump(info, f)
    except BaseException:
      self._info = None
      raise
    finally:
      with contextlib.suppress(OSError):
        os.remove(tmp)
    return True

  @contextlib.contextmanager
  def _guard(self):
    try:
      import fcntl
    except ImportError:  # not POSIX: O_EXCL alone
      yield
      return
    with open(os.path.join(self.workdir, ".run.lock.guard"), "a") as g:
      fcntl.flock(g, fcntl.LOCK_EX)
      try:
        yield
      finally:
        fcntl.flock(g, fcntl.LOCK_UN)

  def acquire(self) -> "WorkdirLock":
    """Takes the lock (see the class docstring).

    Raises:
      WorkdirBusyError: another live run holds it, or the lock file cannot be parsed and is
        recent (the message says how to clear it).
      WorkdirWriteError: the workdir, the guard or the lock cannot be written (no space, no
        inodes, read-only): one line naming the file and the cause.
    """
    try:
      return self._acquire()
    except OSError as e:
      if isinstance(e, WorkdirWriteError):
        raise
      what = getattr(e, "filename", None) or self.path
      raise WorkdirWriteError(
        e.errno,
        f"cannot take the workdir lock {self.path}: {e.strerror or e} ({what}); nothing was "
        "started: free space (or inodes) and run the same command",
      ) from e
    except BaseException:
      self.release()  # interrupted after the lock was written: do not leave it behind
      raise

  def _acquire(self) -> "WorkdirLock":
    os.makedirs(self.workdir, exist_ok=True)
    with self._guard():
      if self._create():
        return self
      info = self._read()
      if info is None and self._create():  # released meanwhile
        return self
      parsed = isinstance(info, dict) and "pid" in info and "host" in info
      info = info if parsed else {}
      if parsed:
        alive = _owner_alive(info)
      else:  # empty or damaged: an owner killed while writing it, unless it is brand new
        try:
          alive = time.time() - os.path.getmtime(self.path) < 30.0
        except OSError:
          alive = False
      if alive is False:
        os.remove(self.path)
        self.stale_owner = info
        if self._create():
          return self
        info = self._read() or {}
      if not (isinstance(info, dict) and "pid" in info and "host" in info):
        raise WorkdirBusyError(
          f"workdir {self.workdir}: its lock {self.path} cannot be parsed (empty or damaged) and "
          "was written less than 30 s ago, so a starting run may be writing it. If no run uses "
          f"this workdir, delete {self.path} and run the same command (a lock older than 30 s "
          "that cannot be parsed is taken over)."
        )
      who = (
        f"pid {info.get('pid', '?')} on host {info.get('host', '?')}, started "
        f"{info.get('started', '?')}"
      )
      hint = (
        f"; it is on another host, so if that run is gone delete {self.path}"
        if alive is None
        else ""
      )
      raise WorkdirBusyError(
        f"workdir {self.workdir} is in use by another run ({who}){hint}. Wait for it to "
        "finish or use another --workdir."
      )

  def release(self) -> None:
    """Removes the lock if this object still owns it."""
    if self._info is None:
      return
    if self._read() == self._info:
      with contextlib.suppress(FileNotFoundError):
        os.remove(self.path)
    self._info = None

  def __enter__(self):
    return self.acquire()

  def __exit__(self, *exc):
    self.release()


def flatten(d: dict) -> dict[str, Any]:
  """``{"a": {"b": 1}} -> {"a.b": 1}`` (an empty dict stays a leaf), by
  ``flax.traverse_util.flatten_dict``."""
  from flax import traverse_util

  flat = traverse_util.flatten_dict(d, keep_empty_nodes=True, sep=".")
  return {k: ({} if v is traverse_util.empty_node else v) for k, v in flat.items()}


def config_changes(old: dict, new: dict) -> dict[str, tuple[Any, Any]]:
  """``{dotted key: (old value, new value)}`` for every key that differs (missing = None)."""
  fo, fn = flatten(old), flatten(new)
  return {k: (fo.get(k), fn.get(k)) for k in sorted(set(fo) | set(fn)) if fo.get(k) != fn.get(k)}


def is_runtime_key(key: str) -> bool:
  return any(key == r or key.startswith(r + ".") for r in RUNTIME_KEYS)


def format_changes(changes: dict[str, tuple[Any, Any]], limit: int = 12) -> str:
  items = [f"{k}: {json.dumps(o)} -> {json.dumps(n)}" for k, (o, n) in changes.items()]
  if len(items) > limit:
    items = items[:limit] + [f"... {len(items) - limit} more"]
  return "; ".join(items)


def load_config(workdir: str) -> dict | None:
  """The stored ``config.json`` of ``workdir`` as a dict, or None when there is none."""
  path = os.path.join(workdir, "config.json")
  if not os.path.exists(path):
    return None
  with open(path) as f:
    return json.load(f)


def structural_error(workdir: str, changes: dict, diff: list[str]) -> ConfigChangedError:
  keys = (
    format_changes(changes)
    if changes
    else ("no config key differs from config.json, so the code that builds the state changed")
  )
  return ConfigChangedError(
    f"workdir {workdir} holds a run whose checkpointed state has a different structure from "
    f"the one this config builds, so it cannot be resumed (nothing was changed). Differing "
    f"config keys: {keys}. State leaves: {'; '.join(diff)}. Use another --workdir, or run "
    "again with the stored config (config.json)."
  )


def missing_config_error(workdir: str, steps: list[int], what: str) -> ConfigChangedError:
  return ConfigChangedError(
    f"{os.path.join(workdir, 'config.json')} {what}, but {workdir} holds checkpoints (steps "
    f"{steps}): without it this run's config cannot be checked against the stored run, so "
    "nothing was changed. Restore config.json, or pass --allow_config_change to resume with "
    f"this config (recorded in {HISTORY_NAME}), or use another --workdir."
  )


def nonstructural_error(workdir: str, changes: dict) -> ConfigChangedError:
  return ConfigChangedError(
    f"the config differs from the run stored in {workdir}/config.json (nothing was changed): "
    f"{format_changes(changes)}. Run again with the stored config to resume, pass "
    "--allow_config_change (trainer.train(..., allow_config_change=True)) to continue this "
    f"run with the new values (recorded in {HISTORY_NAME} and metrics.jsonl), or use "
    "another --workdir."
  )


def record_change(workdir: str, step: int, changes: dict[str, tuple[Any, Any]]) -> None:
  """Appends ``{"time", "step", "changes": {key: [old, new]}}`` to ``config_history.jsonl``."""
  rec = {
    "time": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    "step": int(step),
    "changes": {k: [o, n] for k, (o, n) in changes.items()},
  }
  with open(os.path.join(workdir, HISTORY_NAME), "a") as f:
    f.write(json.dumps(rec) + "\n")
