"""Metric writers: JSON lines in the workdir and a readable terminal line, on process 0 only.

Metrics stay on device between log steps; ``MetricWriter.write`` is the only place they are
fetched. On resume, ``truncate_after(step)`` drops lines written after the restored
checkpoint by the killed run, so the log matches an uninterrupted run.
"""

from __future__ import annotations

import json
import math
import os
import sys
from typing import Any, Mapping

import jax
import numpy as np


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


class MetricWriter:
  """Appends ``{"step": s, **metrics}`` lines to ``<workdir>/metrics.jsonl``.

  Args:
    workdir: run directory.
    enabled: write at all (default: only on process 0).
    echo: also print a readable line to stderr (through tqdm when a bar is active).
  """

  def __init__(self, workdir: str, enabled: bool | None = None, echo: bool = True,
               filename: str = "metrics.jsonl"):
    self.enabled = (jax.process_index() == 0) if enabled is None else enabled
    self.path = os.path.join(workdir, filename)
    self.echo = echo
    self.bar = None
    if self.enabled:
      os.makedirs(workdir, exist_ok=True)

  def truncate_after(self, step: int) -> None:
    """Rewrites the log for a resume from ``step``: drops lines with a larger step (written by
    a run that died after its checkpoint) and keeps each (step, keys) record once (the last
    one written), so every step appears once whatever runs wrote the file before."""
    if not self.enabled or not os.path.exists(self.path):
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
    record = {"step": int(step)}
    record.update({k: (v if math.isfinite(v) else str(v)) for k, v in values.items()})
    with open(self.path, "a") as f:
      f.write(json.dumps(record) + "\n")
    if self.echo:
      line = format_line(step, values, prefix)
      if self.bar is not None:
        self.bar.write(line, file=sys.stderr)
      else:
        print(line, file=sys.stderr, flush=True)
    return values

  def event(self, step: int, name: str, **fields: Any) -> None:
    """Records a non-metric line ``{"step": s, "event": name, **fields}`` (e.g. a config
    change on resume); metric readers skip it because it has none of their keys."""
    if not self.enabled:
      return
    with open(self.path, "a") as f:
      f.write(json.dumps({"step": int(step), "event": name, **fields}) + "\n")


def read_jsonl(path: str) -> list[dict]:
  """All records of a metrics file, in order."""
  with open(path) as f:
    return [json.loads(l) for l in f if l.strip()]
