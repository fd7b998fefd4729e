"""Kernels check themselves before they are trusted.

The first call of each compiled kernel variant (one op's block row, dtypes and static layout: the
``key`` its public op passes) in a process runs the kernel on a small input of its own and compares
it with the pure-jnp reference. A mismatch, a non-finite result or a failure to compile or run makes
the public op fall back to its XLA reference path for that variant, with one
``KernelSelfCheckWarning`` naming the row; it never returns the kernel's wrong result. The check
runs at trace time (inside ``jax.jit`` too), eagerly in a thread of its own (JAX's trace state is
per thread), so a jitted program that holds the kernel is built only after the kernel has passed.

Environment:

* ``ICLR26_KERNEL_SELFCHECK``: ``on`` (default) checks; ``strict`` raises ``KernelSelfCheckError``
  instead of falling back; ``off`` trusts every kernel unchecked.
* ``ICLR26_KERNEL_SELFCHECK_INTERPRET``: ``1`` also checks interpret-mode kernels (CPU tests);
  by default interpret mode, whose kernels the test suite checks against the references, is not.
* ``ICLR26_KERNEL_SELFCHECK_CACHE``: a directory; verdicts are kept there in one JSON file per
  device kind and jax / jaxlib version, keyed by the variant and a hash of the kernel package's
  sources, so a later process on the same stack skips a check already passed (a failure is read
  back too, and warned about again). Unset: no disk cache.

A kernel lowered for a platform that cannot run here (cross-lowering for TPU on a CPU host, a
compile-only ``jax.default_device``) is not checked: nothing of it executes in this process.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import pathlib
import threading
import warnings
from typing import Callable, Hashable

import jax

from kernels_pallas import _backend

ENV = "ICLR26_KERNEL_SELFCHECK"
ENV_INTERPRET = "ICLR26_KERNEL_SELFCHECK_INTERPRET"
ENV_CACHE = "ICLR26_KERNEL_SELFCHECK_CACHE"
MODES = ("off", "on", "strict")

__all__ = [
  "ENV",
  "ENV_CACHE",
  "ENV_INTERPRET",
  "KernelSelfCheckError",
  "KernelSelfCheckWarning",
  "Verdict",
  "mode",
  "reset",
  "trusted",
  "verdicts",
]


class KernelSelfCheckWarning(UserWarning):
  """A kernel variant failed its self-check; its op uses the XLA reference path instead."""


class KernelSelfCheckError(RuntimeError):
  """A kernel variant failed its self-check and ``ICLR26_KERNEL_SELFCHECK=strict``."""


@dataclasses.dataclass(frozen=True)
class Verdict:
  """The outcome of one variant's check: ``ok``, the measured error and tolerance (or why it
  failed to run), and where it came from ("checked" in this process or read from the "disk")."""

  ok: bool
  detail: str
  source: str = "checked"


_VERDICTS: dict = {}
_LOCK = threading.RLock()


def mode() -> str:
  """The check mode from ``ICLR26_KERNEL_SELFCHECK`` (default ``"on"``).

  Raises:
    ValueError: the variable holds something other than off / on / strict.
  """
  value = os.environ.get(ENV, "on").strip().lower() or "on"
  if value not in MODES:
    raise ValueError(f"{ENV} must be one of {MODES}; got {value!r}")
  return value


def _check_interpret() -> bool:
  return os.environ.get(ENV_INTERPRET, "0").strip().lower() in ("1", "true", "on", "yes")


def _target_device(platform: str, interpret: bool) -> tuple[bool, object]:
  """``(runs here, device)``: whether the kernel can execute in this process, and on which
  device (``jax.default_device`` when set, else None: the default backend's first)."""
  dev = jax.config.jax_default_device
  if isinstance(dev, str):
    dev = None
  if not interpret and platform != _backend.backend():
    return False, None  # cross-lowering (e.g. TPU kernels traced on a CPU host)
  if dev is not None:
    try:
      if dev not in jax.local_devices(backend=dev.platform):
        return False, None  # a compile-only device (jax.experimental.topologies)
    except RuntimeError:
      return False, None
  return True, dev


def _device_kind(dev) -> str:
  try:
    return str((dev or jax.local_devices()[0]).device_kind)
  except (RuntimeError, IndexError):
    return "unknown"


@functools.lru_cache(maxsize=None)
def _source_hash(package: str) -> str:
  """sha1 of the ``.py`` files of ``kernels_pallas/<package>`` (and this module): a kernel edit
  invalidates disk verdicts."""
  root = pathlib.Path(__file__).resolve().parent
  h = hashlib.sha1()
  files = sorted((root / package).glob("*.py")) if package else []
  for f in files + [pathlib.Path(__file__).resolve()]:
    h.update(f.name.encode())
    h.update(f.read_bytes())
  return h.hexdigest()[:16]


def _cache_file(kind: str) -> pathlib.Path | None:
  folder = os.environ.get(ENV_CACHE, "").strip()
  if not folder:
    return None
  from importlib import metadata

  try:
    jaxlib = metadata.version("jaxlib")
  except metadata.PackageNotFoundError:
    jaxlib = "unknown"
  safe = "".join(ch if ch.isalnum() else "_" for ch in kind)
  return pathlib.Path(folder) / f"selfcheck-{safe}-jax{jax.__version__}-jaxlib{jaxlib}.json"


def _disk_key(op: str, package: str, key) -> str:
  return f"{op}|{_source_hash(package)}|{key!r}"


def _disk_get(path, dkey) -> Verdict | None:
  if path is None or not path.exists():
    return None
  try:
    got = json.loads(path.read_text()).get(dkey)
  except (OSError, ValueError):
    return None
  if not isinstance(got, dict) or "ok" not in got:
    return None
  return Verdict(bool(got["ok"]), str(got.get("detail", "")), "disk")


def _disk_put(path, dkey, verdict: Verdict) -> None:
  if path is None:
    return
  try:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(path.read_text()) if path.exists() else {}
    data[dkey] = {"ok": verdict.ok, "detail": verdict.detail}
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(tmp, path)
  except (OSError, ValueError):
    pass  # the cache is an optimisation: never fail the op over it


def _run_check(check: Callable[[], tuple[float, float]], dev) -> Verdict:
  """Runs ``check`` on ``dev`` in a thread of its own (JAX's trace state is per thread: the
  check runs eagerly even when the op is being traced under ``jit``, ``grad``, ``vmap`` or
  ``shard_map``); a raised error is a failed check."""
  out: dict = {}

  def work():
    try:
      if dev is not None:
        with jax.default_device(dev):
          out["result"] = check()
      else:
        out["result"] = check()
    except Exception as e:  # noqa: BLE001 - a compile or run failure is a failed check
      out["error"] = e

  thread = threading.Thread(target=work, name="kernel-selfcheck", daemon=True)
  thread.start()
  thread.join()
  if "error" in out:
    e = out["error"]
    lines = str(e).strip().splitlines()
    return Verdict(False, f"{type(e).__name__}: {lines[0][:300] if lines else ''}")
  err, tol = (float(v) for v in out["result"])
  ok = err == err and err <= tol  # NaN fails
  return Verdict(ok, f"max error / scale {err:.3g} (tolerance {tol:.3g})")


def trusted(
  op: str,
  row: str,
  key: Hashable,
  check: Callable[[], tuple[float, float]],
  *,
  platform: str,
  interpret: bool,
  package: str = "",
) -> bool:
  """Whether the kernel variant ``key`` of ``op`` may be used; checks it on its first use.

  Args:
    op: the public op's name (in the warning).
    row: the block row / variant in words (in the warning), e.g. ``"gpu decode (lut) bf16"``.
    key: hashable, everything static that selects the compiled variant (block config, dtypes,
      layout); its ``repr`` keys the disk cache.
    check: runs the kernel and the reference on a small input of its own and returns
      ``(max error / error scale, tolerance)``. It runs eagerly, outside any trace; raising counts
      as a failure (a kernel that does not compile).
    platform: the kernel's platform ("gpu" / "tpu").
    interpret: whether the kernel runs in interpret mode.
    package: the kernel package under ``kernels_pallas`` (its sources key the disk cache).
  Returns:
    True: use the kernel (passed, not checked, or the check is off). False: it failed; use the
    XLA reference path (one ``KernelSelfCheckWarning`` per variant and process).
  Raises:
    KernelSelfCheckError: the check failed and ``ICLR26_KERNEL_SELFCHECK=strict``.
  """
  m = mode()
  if m == "off" or (interpret and not _check_interpret()):
    return True
  runs, dev = _target_device(platform, interpret)
  if not runs:
    return True  # nothing of the kernel executes in this process
  kind = _device_kind(dev)
  full = (op, kind, key)
  with _LOCK:
    verdict = _VERDICTS.get(full)
    fresh = verdict is None
    if fresh:
      path, dkey = _cache_file(kind), _disk_key(op, package, key)
      verdict = _disk_get(path, dkey)
      if verdict is None:
        verdict = _run_check(check, dev)
        _disk_put(path, dkey, verdict)
      _VERDICTS[full] = verdict
  if verdict.ok:
    return True
  msg = (
    f"{op}: kernel row {row!r} failed its self-check on {kind} ({verdict.detail}"
    f"{', verdict read from ' + ENV_CACHE if verdict.source == 'disk' else ''}); "
    f"this process uses the XLA reference path for it. {ENV}=strict raises instead, "
    f"{ENV}=off skips the check."
  )
  if m == "strict":
    raise KernelSelfCheckError(msg)
  if fresh:
    warnings.warn(msg, KernelSelfCheckWarning, stacklevel=3)
  return False


def verdicts() -> dict:
  """This process's verdicts: ``{(op, device kind, key): Verdict}`` (a copy)."""
  with _LOCK:
    return dict(_VERDICTS)


def reset() -> None:
  """Forgets this process's verdicts (tests)."""
  with _LOCK:
    _VERDICTS.clear()
