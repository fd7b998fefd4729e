"""Metric writers on process 0 only: a readable terminal line plus the backends named in
``config.writers``: ``"jsonl"`` (``<workdir>/metrics.jsonl``, the default) and ``"tensorboard"``
(event files in ``<workdir>/tensorboard/``, written with ``tensorboardX``: protobuf and numpy
only, no tensorflow; imported only when asked for).

Metrics stay on device between log steps; ``MetricWriter.write`` is the only place they are
fetched. On resume, ``truncate_after(step)`` makes both logs equal those of an uninterrupted
run: the JSON lines written after the restored checkpoint by the killed run are dropped, and
the new TensorBoard event file starts with a ``SessionLog.START`` at ``step + 1``, which
TensorBoard reads as "discard this run's events at steps >= step + 1 read so far".
"""

from __future__ import annotations

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
      of earlier files at steps >= ``purge_step``. The data server (``--load_fast``) also drops,
      per tag, earlier points at steps >= a newly read step, which a resumed run's first point
      triggers for the same steps.
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
    records: dict[tuple, str] = {}
    for l in lines:
      try:
        rec = json.loads(l)
      except ValueError:
        continue  # a line cut short by a kill
      if rec.get("step", 0) <= step:
        records[(rec.get("step", 0), tuple(sorted(rec)))] = l
    keep = list(records.values())
    tmp = self.path + ".tmp"
    with open(tmp, "w") as f:
      f.writelines(keep)
    os.replace(tmp, self.path)

  def write(self, step: int, metrics: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """Fetches, records and prints ``metrics`` at ``step``; returns them as floats."""
    values = to_python(metrics)
    if not self.enabled:
      return values
    if "jsonl" in self.writers:
      record = {"step": int(step)}
      record.update({k: (v if math.isfinite(v) else str(v)) for k, v in values.items()})
      with open(self.path, "a") as f:
        f.write(json.dumps(record) + "\n")
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
    with open(self.path, "a") as f:
      f.write(json.dumps({"step": int(step), "event": name, **fields}) + "\n")

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
  """All records of a metrics file, in order."""
  with open(path) as f:
    return [json.loads(l) for l in f if l.strip()]
