"""Learning curves of runs, read from their ``metrics.jsonl``, drawn one panel per metric key.

* One panel per key (``train/loss``, ``train/lr`` and ``eval/acc`` each get their own), so every
  y axis carries one quantity; panels are ordered by group (the key's prefix before its first
  ``/``) and then by key, three to a row.
* Several runs are overlaid in each panel, one colour and line style per run, with a legend
  when there are several.
* A panel's y axis is logarithmic when every value of its key, over all the overlaid runs, is
  positive and the largest exceeds the smallest by more than two decades.
* A key whose value never changes within any run (a parameter count, a constant learning rate, a
  metric logged once) is not drawn: it is listed in a last text panel, ``constants``.

Non-numeric values, NaN / inf and event lines are skipped. ``python -m experiments.main`` calls
``write_run_curves`` when a run finishes (``<workdir>/curves.png``, process 0; ``ICLR26_CURVES=0``
turns it off); ``python -m experiments.plot WORKDIR [WORKDIR ...] --out F.png`` draws any set of
runs, and ``plot_runs`` does the same from Python. Matplotlib is imported here only (a Figure with
its own Agg canvas; no display needed).

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
# ICLR26_CURVES=0 turns the end-of-run picture of experiments.main off (the test suite does).
ENV_SWITCH = "ICLR26_CURVES"


def run_curves_enabled() -> bool:
  """Whether a finished run gets its ``curves.png`` (``ICLR26_CURVES`` != "0")."""
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


# The most constants listed in the text panel; the rest are counted on one line.
MAX_CONSTANT_LINES = 24
NCOLS = 3


def _fmt(value: float) -> str:
  """A constant for the text panel: integers in full (parameter counts), others to 6 digits."""
  if float(value).is_integer() and abs(value) < 1e15:
    return str(int(value))
  return f"{value:.6g}"


def split_constants(runs: Sequence[dict], keys: Sequence[str]) -> tuple[list[str], list[str]]:
  """Splits ``keys`` into (drawn, constant) for the runs' series.

  A key is constant when every run that logs it holds one value only for it (logged once, or
  the same value at every step); such a key has no curve to draw. Any run whose value changes
  makes the key a curve, drawn for every run that logs it.

  Args:
    runs: one ``{key: (steps, values)}`` per run (``read_series``).
    keys: the keys to split.

  Returns:
    (drawn keys, constant keys), each in the order of ``keys``.
  """
  drawn, constant = [], []
  for key in keys:
    varies = any(key in s and len(set(s[key][1])) > 1 for s in runs)
    (drawn if varies else constant).append(key)
  return drawn, constant


def constant_lines(runs: Sequence[dict], labels: Sequence[str], keys: Sequence[str]) -> list[str]:
  """One text line per constant key: ``key = value``, or ``key: run = value, ...`` when the runs
  that log it hold different values."""
  lines = []
  for key in keys:
    held = [(label, s[key][1][0]) for s, label in zip(runs, labels) if key in s]
    if len({v for _, v in held}) == 1:
      lines.append(f"{key} = {_fmt(held[0][1])}")
    else:
      lines.append(f"{key}: " + ", ".join(f"{label} = {_fmt(v)}" for label, v in held))
  if len(lines) > MAX_CONSTANT_LINES:
    extra = len(lines) - (MAX_CONSTANT_LINES - 1)
    lines = lines[: MAX_CONSTANT_LINES - 1] + [f"... and {extra} more"]
  return lines


def draw(
  workdirs: Sequence[str],
  *,
  keys: Sequence[str] | None = None,
  labels: Sequence[str] | None = None,
):
  """The curves of one or more runs as a matplotlib ``Figure`` (the layout of the module docstring).

  The figure has its own Agg canvas and is not registered with pyplot: the process's backend is
  left alone (a notebook that calls the trainer keeps drawing its own figures inline).

  Args:
    workdirs: run workdirs (or metrics files); each run is one colour and line style.
    keys: keep only these keys / groups / globs (``select_keys``); default: every key.
    labels: a legend name per run (default: the workdir's base name).

  Returns:
    ``matplotlib.figure.Figure``: one axes per drawn key (its title the key), then one axes
    titled ``constants`` with the axis turned off when some key is constant, then unused grid
    cells (turned off, untitled).

  Raises:
    ValueError: no run given, labels of the wrong length, or no metric left to plot.
    FileNotFoundError: a workdir without a metrics file.
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
  ordered = [k for _, group in group_keys(chosen) for k in group]
  drawn, constant = split_constants(runs, ordered)

  from matplotlib.backends.backend_agg import FigureCanvasAgg
  from matplotlib.figure import Figure

  panels = len(drawn) + (1 if constant else 0)
  ncols = min(NCOLS, panels)
  nrows = -(-panels // ncols)
  fig = Figure(figsize=(4.6 * ncols, 3.2 * nrows))
  FigureCanvasAgg(fig)
  axes = list(fig.subplots(nrows, ncols, squeeze=False).flat)
  styles = ["-", "--", ":", "-."]
  markers = [".", "x", "+", "^"]
  for ax, key in zip(axes, drawn):
    values_all = []
    for r, (series, label) in enumerate(zip(runs, labels)):
      if key not in series:
        continue
      steps, values = series[key]
      ax.plot(
        steps,
        values,
        styles[r % len(styles)],
        color=f"C{r % 10}",
        marker=markers[r % len(markers)] if len(steps) < 3 else None,
        label=label,
        lw=1.3,
      )
      values_all.extend(values)
    # One decision per panel, over every run's values of the key.
    if spans_decades(values_all):
      ax.set_yscale("log")
    ax.set_title(key, fontsize=10)
    ax.set_xlabel("step", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    if len(runs) > 1:
      ax.legend(fontsize=6, loc="best")
  rest = axes[len(drawn) :]
  if constant:
    ax = rest.pop(0)
    ax.axis("off")
    ax.set_title("constants", fontsize=10)
    ax.text(
      0.0,
      1.0,
      "\n".join(constant_lines(runs, labels, constant)),
      transform=ax.transAxes,
      va="top",
      ha="left",
      fontsize=7,
      family="monospace",
    )
  for ax in rest:
    ax.axis("off")
  fig.suptitle(", ".join(labels), fontsize=10)
  fig.tight_layout()
  return fig


def plot_runs(
  workdirs: Sequence[str],
  *,
  out: str,
  keys: Sequence[str] | None = None,
  labels: Sequence[str] | None = None,
  dpi: int = 90,
) -> str:
  """Draws the runs (``draw``) into the PNG ``out`` (its folder is created) and returns ``out``."""
  fig = draw(workdirs, keys=keys, labels=labels)
  os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
  fig.savefig(out, dpi=dpi)
  return out


def write_run_curves(workdir: str) -> str | None:
  """Writes ``<workdir>/curves.png`` from the run's ``metrics.jsonl``; never raises.

  Called by ``experiments.main`` on process 0 when a run finishes, unless ``ICLR26_CURVES=0``. A failure
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
