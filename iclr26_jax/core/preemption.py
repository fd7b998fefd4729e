"""Preemption: SIGTERM or SIGINT means "save at a step boundary, every process at the same step,
then exit with status 0"; the same command resumes.

``StopRequest`` (a context manager; the previous handlers come back on exit) turns either signal
into ``should_stop(step) == True`` at a step boundary: in one process through Python handlers (a
second SIGINT raises ``KeyboardInterrupt`` at once), in several through JAX's preemption sync
manager, which agrees on the step across processes. Call ``should_stop`` once per step on every
process, from the same start step (the sync protocol needs it). ``stop_requests`` counts the
signals handled so far.

One process and several, in detail: docs/scaling.md ("How the processes agree").
"""

from __future__ import annotations

import os
import signal
import threading

import jax


_STOPS = [0]  # stop requests handled by any StopRequest in this process


def stop_requests() -> int:
  """How many SIGINT / SIGTERM a ``StopRequest`` has handled in this process so far.

  A training run that stops early on a signal returns normally (``TrainResult.preempted``); a
  caller that runs several trainings and must not value a cut-short one (the reproduce job)
  compares this count before and after each."""
  return _STOPS[0]


class StopRequest:
  """Watches for SIGTERM / SIGINT during a training loop (see the module docstring)."""

  def __init__(self):
    self.signal_name: str | None = None  # set when a stop was requested (this process)
    self._previous: dict[int, object] = {}
    self._multi = False

  def __enter__(self) -> "StopRequest":
    from jax._src import distributed as _dist  # the client exists once initialize() ran

    self._multi = jax.process_count() > 1 and _dist.global_state.client is not None
    if threading.current_thread() is not threading.main_thread():
      return self  # signal handlers can only be set from the main thread
    wanted = (signal.SIGINT,) if self._multi else (signal.SIGTERM, signal.SIGINT)
    for sig in wanted:
      self._previous[sig] = signal.getsignal(sig)
      signal.signal(sig, self._handle)
    return self

  def __exit__(self, *exc) -> None:
    for sig, handler in self._previous.items():
      signal.signal(sig, handler)
    self._previous.clear()

  def _handle(self, signum, frame) -> None:
    del frame
    name = signal.Signals(signum).name
    _STOPS[0] += 1
    if self.signal_name is not None and signum == signal.SIGINT:
      signal.signal(signal.SIGINT, signal.default_int_handler)
      raise KeyboardInterrupt  # the second Ctrl-C: out now
    self.signal_name = name
    if signum == signal.SIGINT:
      # Let a second Ctrl-C interrupt at once (also in several processes, where the first one
      # goes to the sync manager as SIGTERM).
      signal.signal(signal.SIGINT, self._handle)
    if self._multi:
      os.kill(os.getpid(), signal.SIGTERM)  # to JAX's preemption notifier

  def should_stop(self, step: int) -> bool:
    """True at the step where this run must save and stop (the same step on every process)."""
    if self._multi:
      from jax.experimental import multihost_utils

      if multihost_utils.reached_preemption_sync_point(int(step)):
        self.signal_name = self.signal_name or "SIGTERM"
        return True
      return False
    return self.signal_name is not None
