"""SIGINT / SIGTERM outside the training loop: one line, a prompt stop, nothing half written.

``preemption.StopRequest`` handles a signal inside the loop; the handlers ``install`` sets cover
the rest of a command-line run, in the phase ``set_phase`` names: ``"start"`` (nothing written
yet: one line, then ``os._exit(0)``), ``"run"`` (the trainer holds the workdir: the handler
raises ``Interrupted``, a ``BaseException``, and ``check()`` catches a signal a library swallowed)
and ``"finish"`` (the final checkpoint is being written: the signal is only recorded). Only the
main thread can set handlers; multi-process runs leave SIGTERM to JAX's preemption sync manager.

The phases and what each one leaves on disk: docs/runs.md ("How a run is kept safe").
"""

from __future__ import annotations

import os
import signal
import sys
import threading

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):
  """A SIGINT / SIGTERM arrived before the training loop; ``signal_name`` says which."""

  def __init__(self, signal_name: str, phase: str = ""):
    super().__init__(signal_name)
    self.signal_name = signal_name
    self.phase = phase


_state = {"installed": False, "phase": "start", "received": None, "where": ""}


def installed() -> bool:
  return bool(_state["installed"])


def received() -> str | None:
  """The name of the signal received outside the loop (None when none)."""
  return _state["received"]


def _handle(signum, frame) -> None:
  del frame
  name = signal.Signals(signum).name
  phase = _state["phase"]
  if phase == "finish":
    _state["received"] = name
    return
  if phase == "start":
    print(
      f"{name} received during start-up: stopped before anything was written; run the same "
      "command to start",
      file=sys.stderr,
      flush=True,
    )
    sys.stdout.flush()
    os._exit(0)
  _state["received"] = name
  raise Interrupted(name, _state["where"])


def install() -> None:
  """Installs the handlers (main thread, single-process runs); the phase is ``"start"``."""
  if threading.current_thread() is not threading.main_thread():
    return
  for sig in _SIGNALS:
    signal.signal(sig, _handle)
  _state.update(installed=True, phase="start", received=None)


def set_phase(phase: str, where: str = "") -> None:
  """``"start"``, ``"run"`` or ``"finish"`` (see the module docstring); ``where`` names what runs
  (``"restoring the checkpoint"``), for the stop message. No-op unless installed."""
  if not _state["installed"]:
    return
  if phase not in ("start", "run", "finish"):
    raise ValueError(f"phase must be 'start', 'run' or 'finish'; got {phase!r}")
  _state["phase"] = phase
  _state["where"] = where


def check() -> None:
  """Raises ``Interrupted`` if a signal arrived in the ``"run"`` phase and was swallowed."""
  if _state["installed"] and _state["phase"] == "run" and _state["received"] is not None:
    raise Interrupted(_state["received"], _state["where"])
