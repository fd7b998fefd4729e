"""Learning curves of runs, read from their ``metrics.jsonl``: one panel per metric group.

A metric group is a key's prefix before its first ``/`` (``train/loss`` and ``train/grad_norm``
share the panel ``train``; a key without ``/`` is a group of its own). Several runs are overlaid
in every panel, one line style per run. A panel's y axis is logarithmic when its series are all
positive and one of them spans more than two decades (max / min > 100), as a loss falling from
1e1 to 1e-3 does. Non-numeric values, NaN / inf and event lines are skipped.

The trainer calls ``write_run_curves`` when a run finishes (``<workdir>/curves.png``, process 0;
``ICLR26_CURVES=0`` turns it off);
``python -m experiments.plot WORKDIR [WORKDIR ...] --out F.png`` draws any set of runs. Matplotlib
is imported here only (Agg backend, no display needed).

Examples:
  >>> import json, os, tempfile
  >>> d = tempfile.mkdtemp()
  >>> with open(os.path.join(d, "metrics.jsonl"), "w") as f:
  ...   for s in range(1, 6):
  ...     _ = f.write(json.dumps({"step": s, "train/loss": 10.0 ** -s, "eval/acc": s / 5}) + "\\n")
  >>> series = read_series(d)
  >>> sorted(series), series["train/loss"][0]
  (['eval/acc', 'train/loss'], [1, 2, 3, 4, 5])
  >>> [g for g, _ in group_keys(series)]
  ['eval', 'train']
  >>> spans_decades(series["train/loss"][1]), spans_decades(series["eval/acc"][1])
  (True, False)
  >>> path = plot_runs([d], out=os.path.join(d, "c.png"))
  >>> open(path, "rb").read(8) == b"\\x89PNG\\r\\n\\x1a\\n"
  True
"""

from __future__ import annotations

import fnmatch
import math
import os
import warnings
from typing import Iterable, Sequence

# Series of one run: key -> (steps, values), in the order the file holds them.
Series = dict[str, tuple[list[int], list[float]]]

METRICS_FILE = "metrics.jsonl"
CURVES_FILE = "curves.png"
# ICLR26_CURVES=0 turns the trainer's end-of-run picture off (the test suite does).
ENV_SWITCH = "ICLR26_CURVES"


def run_curves_enabled() -> bool:
  """Whether the trainer writes ``curves.png`` at the end of a run (``ICLR26_CURVES`` != "0")."""
  return os.environ.get(ENV_SWITCH, "1") != "0"


def _metrics_path(workdir_or_file: str) -> str:
  if os.path.isdir(workdir_or_file):
    return os.path.join(workdir_or_file, METRICS_FILE)
  return workdir_or_file


def read_series(workdir_or_file: str) -> Series:
  """Every numeric, finite scalar metric of a run, as ``{key: (steps, values)}``.

  Args:
    workdir_or_file: a run's workdir (its ``metrics.jsonl`` is read) or a metrics file.

  Returns:
    ``{key: (steps, values)}``: two lists of equal length per key, in file order. Event lines
    (``{"event": ...}``), non-numeric values and NaN / inf are left out.

  Raises:
    FileNotFoundError: no metrics file at that path.
  """
  from iclr26_jax.core.metrics import read_jsonl

  path = _metrics_path(workdir_or_file)
  if not os.path.exists(path):
    raise FileNotFoundError(f"no metrics file: {path} (a workdir holds {METRICS_FILE})")
  series: Series = {}
  for rec in read_jsonl(path):
    if "event" in rec or "step" not in rec:
      continue
    step = int(rec["step"])
    for key, value in rec.items():
      if key == "step" or isinstance(value, bool) or not isinstance(value, (int, float)):
        continue
      if not math.isfinite(value):
        continue
      steps, values = series.setdefault(key, ([], []))
      steps.append(step)
      values.append(float(value))
  return series


def select_keys(keys: Iterable[str], patterns: Sequence[str] | None) -> list[str]:
  """The keys that match any of ``patterns`` (a key, a group name or a glob such as ``eval/*``).

  Args:
    keys: metric keys.
    patterns: ``None`` keeps every key.

  Returns:
    The matching keys, sorted.
  """
  keys = sorted(set(keys))
  if not patterns:
    return keys
  return [
    k
    for k in keys
    if any(k == p or k.split("/", 1)[0] == p or fnmatch.fnmatchcase(k, p) for p in patterns)
  ]


def group_keys(series_or_keys: Iterable[str]) -> list[tuple[str, list[str]]]:
  """Keys grouped by their prefix before the first ``/``: ``[(group, [keys...]), ...]``, sorted."""
  groups: dict[str, list[str]] = {}
  for k in sorted(set(series_or_keys)):
    groups.setdefault(k.split("/", 1)[0], []).append(k)
  return sorted(groups.items())


def spans_decades(values: Sequence[float], decades: float = 2.0) -> bool:
  """True when every value is positive and max / min exceeds ``10 ** decades``."""
  if not values or min(values) <= 0:
    return False
  return max(values) / min(values) > 10.0**decades


def plot_runs(
  workdirs: Sequence[str],
  *,
  out: str,
  keys: Sequence[str] | None = None,
  labels: Sequence[str] | None = None,
  dpi: int = 90,
) -> str:
  """Draws the curves of one or more runs into one PNG, a panel per metric group.

  Args:
    workdirs: run workdirs (or metrics files); each is one line style.
    out: the PNG to write (its folder is created).
    keys: keep only these keys / groups / globs (``select_keys``); default: every key.
    labels: a legend name per run (default: the workdir's base name).
    dpi: resolution of the PNG.

  Returns:
    ``out``.

  Raises:
    ValueError: no run given, labels of the wrong length, or no metric left to plot.
  """
  if not workdirs:
    raise ValueError("plot_runs needs at least one workdir")
  if labels is not None and len(labels) != len(workdirs):
    raise ValueError(f"labels: got {len(labels)} names for {len(workdirs)} workdirs")
  runs = [read_series(w) for w in workdirs]
  if labels is None:
    labels = [os.path.basename(os.path.normpath(w)) or w for w in workdirs]
  chosen = select_keys([k for s in runs for k in s], keys)
  if not chosen:
    have = sorted({k for s in runs for k in s})
    raise ValueError(
      f"no metric to plot (keys={list(keys) if keys else None}; the runs hold {have})"
    )
  groups = group_keys(chosen)

  # A Figure with its own Agg canvas, not pyplot: the process's backend is left alone (a
  # notebook that calls the trainer keeps drawing its own figures inline) and no figure is
  # registered with pyplot.
  from matplotlib.backends.backend_agg import FigureCanvasAgg
  from matplotlib.figure import Figure

  ncols = min(3, len(groups))
  nrows = -(-len(groups) // ncols)
  fig = Figure(figsize=(4.6 * ncols, 3.2 * nrows))
  FigureCanvasAgg(fig)
  axes = fig.subplots(nrows, ncols, squeeze=False)
  styles = ["-", "--", ":", "-."]
  markers = [".", "x", "+", "^"]
  for ax, (group, gkeys) in zip(axes.flat, groups):
    log = False
    positive = True
    for r, (series, label) in enumerate(zip(runs, labels)):
      for c, key in enumerate(gkeys):
        if key not in series:
          continue
        steps, values = series[key]
        name = key if len(runs) == 1 else f"{label}: {key}"
        ax.plot(
          steps,
          values,
          styles[r % len(styles)],
          color=f"C{c % 10}",
          marker=markers[r % len(markers)] if len(steps) < 3 else None,
          label=name,
          lw=1.3,
        )
        positive = positive and min(values) > 0
        log = log or spans_decades(values)
    if log and positive:
      ax.set_yscale("log")
    ax.set_title(group, fontsize=10)
    ax.set_xlabel("step", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, loc="best")
  for ax in list(axes.flat)[len(groups) :]:
    ax.axis("off")
  fig.suptitle(", ".join(labels), fontsize=10)
  fig.tight_layout()
  os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
  fig.savefig(out, dpi=dpi)
  return out


def write_run_curves(workdir: str) -> str | None:
  """Writes ``<workdir>/curves.png`` from the run's ``metrics.jsonl``; never raises.

  Called by the trainer on process 0 when a run finishes, unless ``ICLR26_CURVES=0``. A failure
  (no matplotlib backend, a full disk) is a warning: the run's result does not depend on its
  picture.

  Returns:
    The PNG's path, or ``None`` when nothing was written.
  """
  if not run_curves_enabled() or not os.path.exists(os.path.join(workdir, METRICS_FILE)):
    return None  # a run that writes TensorBoard events only
  try:
    series = read_series(workdir)
    if not series:
      return None
    return plot_runs([workdir], out=os.path.join(workdir, CURVES_FILE))
  except Exception as e:  # noqa: BLE001 (a picture must never fail a finished run)
    warnings.warn(f"could not write {os.path.join(workdir, CURVES_FILE)}: {e}", stacklevel=2)
    return None
