"""Multi-process initialisation: ``jax.distributed.initialize`` only when asked.

``maybe_initialize`` starts ``jax.distributed`` when ``--multihost`` is passed or
``ICLR26_MULTIHOST=1`` is set; it must run before anything touches a device. JAX finds the
coordinator itself on TPU pods and SLURM / Open MPI clusters; elsewhere it comes from
``ICLR26_COORDINATOR=host:port``, ``ICLR26_NUM_PROCESSES`` and ``ICLR26_PROCESS_ID``
(``ICLR26_LOCAL_DEVICES=k``: k CPU devices per process, for rehearsals). ``PeerWatch`` ends this
process in one line (exit status 1) when a peer's heartbeat stops for ``ICLR26_PEER_TIMEOUT``
seconds (default 10; 0 turns it off), instead of hanging until JAX's own heartbeat timeout.

The environment and how the peer watch works: docs/scaling.md ("How the processes agree").
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time

from absl import logging
import jax

_INITIALIZED = False


def _env_flag(name: str) -> bool:
  return os.environ.get(name, "").strip().lower() in ("1", "true", "yes")


def multihost_requested(flag: bool | None = None) -> bool:
  """True when the flag or ``ICLR26_MULTIHOST`` asks for ``jax.distributed``."""
  return bool(flag) or _env_flag("ICLR26_MULTIHOST")


def maybe_initialize(multihost: bool | None = None) -> bool:
  """Initialises ``jax.distributed`` when requested; returns whether it did.

  Idempotent. Logs the process index, process count and device counts.
  """
  global _INITIALIZED
  if not multihost_requested(multihost):
    return False
  if _INITIALIZED:
    return True
  kwargs = {}
  if "ICLR26_COORDINATOR" in os.environ:
    kwargs["coordinator_address"] = os.environ["ICLR26_COORDINATOR"]
    try:
      kwargs["num_processes"] = int(os.environ["ICLR26_NUM_PROCESSES"])
      kwargs["process_id"] = int(os.environ["ICLR26_PROCESS_ID"])
    except KeyError as e:
      raise ValueError(
        f"ICLR26_COORDINATOR is set but {e.args[0]} is not; set ICLR26_NUM_PROCESSES and "
        "ICLR26_PROCESS_ID too (or unset all three on a TPU pod / SLURM cluster)"
      ) from None
  if "ICLR26_LOCAL_DEVICES" in os.environ:
    # CPU rehearsal: k CPU devices per process, collectives over gloo.
    jax.config.update("jax_num_cpu_devices", int(os.environ["ICLR26_LOCAL_DEVICES"]))
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    if jax.config.jax_compilation_cache_dir and jax.config.jax_enable_compilation_cache:
      # With jax 0.12.1 a process that loads an executable another process wrote to the
      # persistent cache waits forever at its first collective: the rehearsal compiles instead.
      logging.warning("persistent compilation cache off: multi-process CPU runs hang on its hits")
      jax.config.update("jax_enable_compilation_cache", False)
  jax.distributed.initialize(**kwargs)
  _INITIALIZED = True
  timeout = float(os.environ.get("ICLR26_PEER_TIMEOUT", DEFAULT_PEER_TIMEOUT))
  if timeout > 0 and jax.process_count() > 1:
    PeerWatch(timeout).start()
  logging.info(
    "jax.distributed: process %d of %d, %d local / %d global devices",
    jax.process_index(),
    jax.process_count(),
    jax.local_device_count(),
    jax.device_count(),
  )
  return True


def is_primary() -> bool:
  """True on process 0 (the one that writes logs and reports)."""
  return jax.process_index() == 0


DEFAULT_PEER_TIMEOUT = 10.0  # seconds; ICLR26_PEER_TIMEOUT overrides, 0 disables
_PREFIX = "iclr26_peer_watch"
_WATCH: "PeerWatch | None" = None


def await_peer_verdict() -> None:
  """After a collective failed in this process (gloo: "Connection closed by peer"), gives the
  peer watch time to name the lost process: it ends the process with its one line if a peer is
  dead; returns (so the caller reports the error itself) if every peer is still beating."""
  watch = _WATCH
  if watch is None or not watch.is_alive():
    return
  deadline = time.monotonic() + watch.timeout + 3 * watch.interval
  while time.monotonic() < deadline and watch.is_alive():
    time.sleep(watch.interval / 2)


class PeerWatch(threading.Thread):
  """Stops this process in one line when a peer stops beating (see the module docstring).

  Uses the ``jax.distributed`` client's key-value store (``jax._src.distributed.global_state``:
  the store JAX's own multihost utilities use; there is no public handle to it).
  """

  def __init__(self, timeout: float):
    super().__init__(name="iclr26-peer-watch", daemon=True)
    from jax._src import distributed as _dist

    self.client = _dist.global_state.client
    self.address = _dist.global_state.coordinator_address
    self.me = jax.process_index()
    self.n = jax.process_count()
    self.timeout = float(timeout)
    self.interval = min(1.0, self.timeout / 5)
    self._stop_event = threading.Event()
    self._done = False
    atexit.register(self.finish)
    global _WATCH
    _WATCH = self

  def finish(self) -> None:
    """Marks this process done, so peers stop watching it (run at exit). The watch itself goes
    on until every peer is done too: at exit JAX waits at a shutdown barrier for all processes,
    and a dead peer would hold that barrier for JAX's 100 s heartbeat timeout."""
    if self._done:
      return
    self._done = True
    try:
      self.client.key_value_set(f"{_PREFIX}/done/{self.me}", "1", allow_overwrite=True)
    except Exception:  # noqa: BLE001 — the coordinator may be gone already; nothing to tell
      pass
    # Wait for the watch to end (every peer done, or a dead peer's line and exit 1) before the
    # interpreter tears down: a daemon thread still inside a key-value call then aborts the process.
    if self.is_alive() and threading.current_thread() is not self:
      self.join(timeout=self.timeout + 5 * self.interval)

  def _die(self, what: str) -> None:
    print(
      f"error: {what}; stopping process {self.me} of {self.n} (ICLR26_PEER_TIMEOUT="
      f"{self.timeout:g} s). Checkpoints up to the last completed save are intact: run the same "
      "command on every host to resume",
      file=sys.stderr,
      flush=True,
    )
    os._exit(1)  # the main thread may be blocked inside a collective that will never finish

  def run(self) -> None:
    beat = 0
    start = time.monotonic()
    seen = {p: (None, start) for p in range(self.n) if p != self.me}
    failing_since = None
    while not self._stop_event.wait(self.interval):
      beat += 1
      now = time.monotonic()
      try:
        self.client.key_value_set(f"{_PREFIX}/alive/{self.me}", str(beat), allow_overwrite=True)
        alive = {
          k.rsplit("/", 1)[-1]: v for k, v in self.client.key_value_dir_get(f"{_PREFIX}/alive/")
        }
        done = {k.rsplit("/", 1)[-1] for k, _ in self.client.key_value_dir_get(f"{_PREFIX}/done/")}
      except Exception as e:  # noqa: BLE001 — the coordinator (process 0) cannot be reached
        if self._stop_event.is_set():
          return
        failing_since = failing_since or now
        if now - failing_since > self.timeout:
          first = str(e).splitlines()[0][:160] if str(e) else type(e).__name__
          self._die(
            f"lost the coordinator (process 0 at {self.address}) for {now - failing_since:.0f} s: {first}"
          )
        continue
      failing_since = None
      if len(done - {str(self.me)}) == self.n - 1 and self._done:
        return  # everyone finished
      for p, (value, since) in seen.items():
        if str(p) in done:
          continue
        current = alive.get(str(p))
        if current != value:
          seen[p] = (current, now)
        elif now - since > self.timeout:
          self._die(f"lost process {p} of {self.n}: no heartbeat for {now - since:.0f} s")
