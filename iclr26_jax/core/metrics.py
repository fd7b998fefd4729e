"""Metric writers on process 0 only: a readable terminal line plus the backends named in
``config.writers``: ``"jsonl"`` (``<workdir>/metrics.jsonl``, the default) and ``"tensorboard"``
(``<workdir>/tensorboard/``, written with ``tensorboardX``: no tensorflow; imported only when asked
for). Also ``read_jsonl`` and ``Progress`` (the bar, or plain progress lines).

Metrics stay on device between log steps; ``MetricWriter.write`` is the only place they are
fetched. On resume, ``truncate_after(step)`` makes both logs equal those of an uninterrupted run.

The records a run logs and how a resume rewrites them: docs/runs.md ("Configuration and logged
metrics").
"""

from __future__ import annotations

import contextlib
import errno
import glob
import json
import math
import os
import sys
import time
from typing import Any, Iterable, Mapping

import jax
import numpy as np

from iclr26_jax.core import config as config_lib

# The backends ``config.writers`` may name.
WRITERS = ("jsonl", "tensorboard")
TENSORBOARD_PIP = "pip install tensorboardX==2.6.5"  # or: pip install -e ".[tensorboard]"


def writer_names(writers: Iterable[str] | str) -> tuple[str, ...]:
  """Normalises and checks ``config.writers``.

  Accepts a tuple of names (``("jsonl", "tensorboard")``) and items holding comma-separated
  names, which is what absl gives for ``--config.writers=jsonl,tensorboard``
  (``("jsonl,tensorboard",)``). Duplicates are dropped, order kept.

  Raises:
    config_lib.ConfigError: an unknown name (the message lists the allowed ones), or
      ``"tensorboard"`` without the ``tensorboardX`` package (the message gives the pip
      command).
  """
  if isinstance(writers, str):
    writers = (writers,)
  names: list[str] = []
  for item in writers:
    if not isinstance(item, str):
      raise config_lib.ConfigError(
        f"config key 'writers' holds names of metric writers; got {item!r} in {writers!r}"
      )
    for name in item.split(","):
      name = name.strip().strip("'\"").strip()
      if name and name not in names:
        names.append(name)
  unknown = [n for n in names if n not in WRITERS]
  if unknown:
    raise config_lib.ConfigError(
      f"config key 'writers': unknown metric writer(s) {unknown}; allowed: {list(WRITERS)} "
      "(e.g. --config.writers=jsonl,tensorboard)"
    )
  if "tensorboard" in names:
    _import_tensorboardx()
  return tuple(names)


def _import_tensorboardx():
  """The ``tensorboardX`` module, or a ConfigError naming the pip command."""
  try:
    import tensorboardX
  except ImportError as e:
    raise config_lib.ConfigError(
      "config key 'writers' asks for 'tensorboard', which needs the tensorboardX package "
      f"(pure Python, no tensorflow): {TENSORBOARD_PIP}  (or pip install -e '.[tensorboard]')"
    ) from e
  return tensorboardX


def to_python(metrics: Mapping[str, Any]) -> dict[str, float]:
  """Fetches scalar metrics to Python floats (one device→host transfer)."""
  host = jax.device_get(dict(metrics))
  return {k: float(np.asarray(v)) for k, v in host.items()}


def format_line(step: int, metrics: Mapping[str, float], prefix: str = "") -> str:
  """``step 120 | loss 0.0312 | grad_norm 1.2`` with sorted keys, 4 significant digits."""
  parts = [f"{prefix}step {step}"]
  for k in sorted(metrics):
    v = metrics[k]
    parts.append(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}")
  return " | ".join(parts)


class MetricsWriteError(OSError):
  """A metrics line could not be written (full disk); the file holds no part of it."""

  def __str__(self) -> str:
    return str(self.strerror)


def _write_error(path: str, step: int, error: OSError) -> MetricsWriteError:
  return MetricsWriteError(
    error.errno,
    f"cannot write the metrics of step {step} to {path} ({error.strerror or error}); no partial "
    "line was left; the checkpoints saved before are intact: free space and run the same "
    "command to resume",
  )


class TensorBoardWriter:
  """Scalars as TensorBoard event files in ``logdir`` (one file per run), written synchronously.

  Each ``write`` appends one ``Event`` (all of a step's scalars as ``simple_value``s, float32)
  and flushes it, so a viewer sees every log step at once and a killed run loses nothing it
  logged. Event files are named ``events.out.tfevents.<unix seconds>.<host>.<run number>``: the
  run number keeps a resume within the same second from overwriting the killed run's file and
  keeps the files in run order under TensorBoard's name sort.

  Args:
    logdir: the directory (created).
    purge_step: when set, the file starts with ``SessionLog.START`` at this step (what
      ``tensorboardX.SummaryWriter(purge_step=...)`` writes): TensorBoard then discards the events
      of earlier files at steps >= ``purge_step``.
  """

  def __init__(self, logdir: str, purge_step: int | None = None):
    _import_tensorboardx()
    from tensorboardX.event_file_writer import EventsWriter
    from tensorboardX.proto import event_pb2, summary_pb2

    self._event_pb2, self._summary_pb2 = event_pb2, summary_pb2
    os.makedirs(logdir, exist_ok=True)
    runs = len(glob.glob(os.path.join(logdir, "events.out.tfevents.*")))
    # EventsWriter writes the file_version event first; the file is opened "wb".
    self._writer = EventsWriter(os.path.join(logdir, "events"), filename_suffix=f".{runs:05d}")
    if purge_step is not None:
      self._writer.write_event(
        event_pb2.Event(
          wall_time=time.time(),
          step=int(purge_step),
          session_log=event_pb2.SessionLog(status=event_pb2.SessionLog.START),
        )
      )
    self._writer.flush()

  def write(self, step: int, values: Mapping[str, float]) -> None:
    """Appends ``values`` (tag -> float) at ``step`` and flushes."""
    summary = self._summary_pb2.Summary(
      value=[
        self._summary_pb2.Summary.Value(tag=k, simple_value=float(v))
        for k, v in sorted(values.items())
      ]
    )
    self._writer.write_event(
      self._event_pb2.Event(wall_time=time.time(), step=int(step), summary=summary)
    )
    self._writer.flush()

  def flush(self) -> None:
    self._writer.flush()

  def close(self) -> None:
    self._writer.close()


class MetricWriter:
  """Process-0 metric log: a terminal line plus the ``writers`` backends.

  ``"jsonl"`` appends ``{"step": s, **metrics}`` lines to ``<workdir>/metrics.jsonl``;
  ``"tensorboard"`` writes the same keys as scalars to ``<workdir>/tensorboard/`` (see
  ``TensorBoardWriter``; its event file opens at ``truncate_after`` or the first ``write``).
  Close it (``close()`` or ``with``) so the event file is complete.

  Args:
    workdir: run directory.
    enabled: write at all (default: only on process 0).
    echo: also print a readable line to stderr (through tqdm when a bar is active).
    filename: the JSON lines file inside ``workdir``.
    writers: backend names (``config.writers``; see ``writer_names``).
  """

  def __init__(
    self,
    workdir: str,
    enabled: bool | None = None,
    echo: bool = True,
    filename: str = "metrics.jsonl",
    writers: Iterable[str] = ("jsonl",),
  ):
    self.enabled = (jax.process_index() == 0) if enabled is None else enabled
    self.writers = writer_names(writers)
    self.path = os.path.join(workdir, filename)
    self.tb_dir = os.path.join(workdir, "tensorboard")
    self.echo = echo
    self.bar = None
    self._tb: TensorBoardWriter | None = None
    # Every record this writer logged, ``{"step": s, **values}`` in order; after
    # ``truncate_after(step)`` it starts with the records kept in the JSON-lines file up to
    # ``step`` (a resumed run's earlier curve), so a caller never reads the file back.
    self.history: list[dict[str, Any]] = []
    if self.enabled:
      os.makedirs(workdir, exist_ok=True)

  def _open_tb(self, purge_step: int | None) -> None:
    if self.enabled and "tensorboard" in self.writers and self._tb is None:
      self._tb = TensorBoardWriter(self.tb_dir, purge_step=purge_step)

  def truncate_after(self, step: int) -> None:
    """Starts the log of a run that continues after ``step`` (0 = a fresh start).

    JSON lines: rewrites the file, dropping lines with a larger step (written by a run that
    died after its checkpoint) and keeping each (step, keys) record once (the last one
    written), so every step appears once whatever runs wrote the file before. TensorBoard: opens
    this run's event file with a purge at ``step + 1`` (event files are not edited).
    """
    self._open_tb(purge_step=int(step) + 1)
    if not self.enabled or "jsonl" not in self.writers or not os.path.exists(self.path):
      return
    with open(self.path) as f:
      lines = [l if l.endswith("\n") else l + "\n" for l in f if l.strip()]
    records: dict[tuple, tuple[str, dict]] = {}
    for l in lines:
      try:
        rec = json.loads(l)
      except ValueError:
        continue  # a line cut short by a kill
      if rec.get("step", 0) <= step:
        records[(rec.get("step", 0), tuple(sorted(rec)))] = (l, rec)
    keep = [l for l, _ in records.values()]
    self.history = [r for _, r in records.values() if "event" not in r] + self.history
    tmp = self.path + ".tmp"
    try:
      with open(tmp, "w") as f:
        f.writelines(keep)
      os.replace(tmp, self.path)
    except OSError as e:
      with contextlib.suppress(OSError):
        os.remove(tmp)
      raise _write_error(self.path, step, e) from e

  def write(self, step: int, metrics: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """Fetches, records and prints ``metrics`` at ``step``; returns them as floats."""
    values = to_python(metrics)
    self.history.append({"step": int(step), **values})
    if not self.enabled:
      return values
    if "jsonl" in self.writers:
      record = {"step": int(step)}
      record.update({k: (v if math.isfinite(v) else str(v)) for k, v in values.items()})
      self._append(json.dumps(record) + "\n", step)
    if "tensorboard" in self.writers:
      self._open_tb(purge_step=None)
      self._tb.write(step, values)
    if self.echo:
      line = format_line(step, values, prefix)
      if self.bar is not None:
        self.bar.write(line, file=sys.stderr)
      else:
        print(line, file=sys.stderr, flush=True)
    return values

  def event(self, step: int, name: str, **fields: Any) -> None:
    """Records a non-metric line ``{"step": s, "event": name, **fields}`` (e.g. a config
    change on resume) in the JSON lines; metric readers skip it because it has none of their
    keys."""
    if not self.enabled or "jsonl" not in self.writers:
      return
    self._append(json.dumps({"step": int(step), "event": name, **fields}) + "\n", step)

  def _append(self, line: str, step: int) -> None:
    """Appends one line whole or not at all: a short or failed write (a full disk) is cut back
    to the file's previous end, then ``MetricsWriteError`` says so in one line."""
    data = line.encode()
    try:
      fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as e:
      raise _write_error(self.path, step, e) from e
    try:
      end = os.fstat(fd).st_size
      try:
        done = 0
        while done < len(data):
          n = os.write(fd, data[done:])
          if n <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
          done += n
      except OSError as e:
        with contextlib.suppress(OSError):
          os.ftruncate(fd, end)
        raise _write_error(self.path, step, e) from e
    finally:
      os.close(fd)

  def flush(self) -> None:
    """Flushes the TensorBoard file (JSON lines are closed after every write)."""
    if self._tb is not None:
      self._tb.flush()

  def close(self) -> None:
    """Closes the TensorBoard file; safe to call twice."""
    if self._tb is not None:
      self._tb.close()
      self._tb = None

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    self.close()


def read_jsonl(path: str) -> list[dict]:
  """All records of a metrics file, in order.

  A last line cut short (a run killed while it wrote) is skipped with one warning naming the file
  and the line; an unreadable line before the last raises ``ValueError`` naming both.
  """
  with open(path) as f:
    lines = [(i, line) for i, line in enumerate(f, 1) if line.strip()]
  records = []
  for k, (i, line) in enumerate(lines):
    try:
      records.append(json.loads(line))
    except json.JSONDecodeError as e:
      if k == len(lines) - 1:
        import logging

        logging.getLogger(__name__).warning(
          "%s: skipped line %d, cut short (%s); the records before it are read", path, i, e.msg
        )
        break
      raise ValueError(f"{path}, line {i}: not a JSON record ({e.msg})") from None
  return records


def _clock(seconds: float) -> str:
  seconds = int(round(seconds))
  h, rest = divmod(seconds, 3600)
  return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


class Progress:
  """The progress of a run on process 0: a tqdm bar when ``file`` is a terminal, plain log lines
  otherwise (a file or a pipe gets no ``\\r`` frames, and the final state is printed once).

  Phases without steps (the first call's compile, an evaluation) are named as they start, so a
  long silence always has a line above it saying what runs::

    progress = Progress(total=2000, initial=0, desc="toy")   # "toy: compiling the update step..."
    ...first step...
    progress.start(1)            # the bar (terminal) or "toy: first step done in 3.2 s"
    progress.update(2)           # every step; plain mode prints a line every ``every_s`` seconds
    with progress.phase("evaluating at step 2000"):
      ...
    progress.close()

  ``MetricWriter.bar`` may hold it: ``write(line)`` prints a log line without breaking the bar.

  Args:
    total: the last step.
    initial: the step the run starts after (0, or the restored checkpoint's step).
    desc: the method's name, at the start of every line.
    file: where to print (default ``sys.stderr``).
    every_s: plain mode: seconds between progress lines.
    tty: force bar (True) or plain (False) mode; default ``file.isatty()``.
  """

  def __init__(
    self,
    total: int,
    initial: int,
    desc: str,
    file=None,
    every_s: float = 30.0,
    tty: bool | None = None,
  ):
    self.file = file if file is not None else sys.stderr
    self.total, self.step, self.desc, self.every_s = int(total), int(initial), desc, every_s
    self.tty = bool(getattr(self.file, "isatty", lambda: False)()) if tty is None else tty
    self.bar = None
    self._t0 = time.perf_counter()
    self._start_step, self._start_t, self._last_print = self.step, None, None
    self._closed = False
    self._printed_step = None  # plain mode: the step of the last progress line
    self._print(f"{desc}: compiling the update step (the first step waits for it)...")

  def _print(self, line: str) -> None:
    if self.bar is not None:
      self.bar.write(line, file=self.file)
    else:
      print(line, file=self.file, flush=True)

  def write(self, line: str, file=None) -> None:
    """A log line (``MetricWriter``'s metric lines), above the bar on a terminal."""
    del file
    self._print(line)

  def start(self, step: int) -> None:
    """The first step has returned (compile included): start the bar, or say so in one line."""
    self.step = int(step)
    self._start_t = self._last_print = time.perf_counter()
    self._start_step = self.step
    took = self._start_t - self._t0
    self._print(f"{self.desc}: compiled; first step done in {took:.1f} s")
    if self.tty:
      from tqdm.auto import tqdm

      self.bar = tqdm(
        total=self.total,
        initial=self.step,
        desc=self.desc,
        unit="step",
        dynamic_ncols=True,
        mininterval=1.0,
        file=self.file,
      )

  def _line(self) -> str:
    pct = 100.0 * self.step / max(self.total, 1)
    elapsed = time.perf_counter() - (self._start_t or self._t0)
    done = self.step - self._start_step
    rate = done / elapsed if elapsed > 0 and done > 0 else 0.0
    eta = f", eta {_clock((self.total - self.step) / rate)}" if rate > 0 else ""
    return (
      f"{self.desc}: step {self.step}/{self.total} ({pct:.0f}%), {rate:.3g} step/s, "
      f"{_clock(elapsed)} elapsed{eta}"
    )

  def update(self, step: int) -> None:
    """Step ``step`` is done."""
    n, self.step = int(step) - self.step, int(step)
    if self.bar is not None:
      self.bar.update(n)
    elif not self.tty and self._last_print is not None:
      now = time.perf_counter()
      if now - self._last_print >= self.every_s:
        self._last_print = now
        self._printed_step = self.step
        self._print(self._line())

  @contextlib.contextmanager
  def phase(self, text: str):
    """A stretch without steps (an evaluation): named on the bar, or in a line before and a line
    after (with its duration) in plain mode."""
    t0 = time.perf_counter()
    if self.bar is not None:
      self.bar.set_postfix_str(text + "...", refresh=True)
    else:
      self._print(f"{self.desc}: {text}...")
    try:
      yield
    finally:
      took = time.perf_counter() - t0
      if self.bar is not None:
        self.bar.set_postfix_str("", refresh=False)
        self._print(f"{self.desc}: {text}: {took:.1f} s")
      else:
        self._print(f"{self.desc}: {text}: done in {took:.1f} s")
      if self._last_print is not None:
        self._last_print = time.perf_counter()

  def close(self) -> None:
    """Ends the display once: the bar's final frame, or one final plain line."""
    if self._closed:
      return
    self._closed = True
    if self.bar is not None:
      self.bar.close()
      self.bar = None
    elif self._start_t is not None and self._printed_step != self.step:
      self._print(self._line())  # the final state, once
