"""SIGINT / SIGTERM outside the training loop: one line, a prompt stop, nothing half written.

``preemption.StopRequest`` handles a signal inside the loop (save at the step boundary). This
module covers the rest of a command-line run, in three phases that ``experiments.main`` and the
trainer move through:

- ``"start"`` (imports, flag parsing, config checks, JAX start-up): nothing has been written, so
  the handler prints one line and ends the process at once (``os._exit``: no Python or JAX code
  runs after it that could swallow it, as a JAX callback swallowed ``KeyboardInterrupt``);
- ``"run"`` (the trainer holds the workdir: restore, data load, compile): the handler raises
  ``Interrupted`` (a ``BaseException``, so no library's ``except Exception`` catches it);
  the trainer releases the lock and closes its files on the way out. A signal that a library
  swallowed anyway is seen by ``check()``, which the trainer calls before the loop;
- ``"finish"`` (training is done, the final checkpoint is being written or was written): the
  handler only records the signal; the run ends normally and says it ignored it.

Only the main thread can set handlers; ``install`` is a no-op elsewhere and in multi-process runs
(JAX's preemption sync manager owns SIGTERM there).
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
