"""Learning curves of one or more runs, without writing code.

  python -m experiments.plot WORKDIR [WORKDIR ...] [--keys KEY ...] [--labels NAME ...] --out F.png

Reads each workdir's ``metrics.jsonl`` and writes one PNG laid out as follows:

* one panel per metric key (``train/loss``, ``train/lr``, ``eval/acc`` each get their own), so
  every y axis carries one quantity: a learning rate never shares the loss's scale. Panels are
  ordered by group (the key's prefix before ``/``) and then by key, three to a row;
* the runs are overlaid in each panel, one colour and line style per run, with a legend when there
  are several;
* a panel's y axis is logarithmic when every value of that key, over all the overlaid runs, is
  positive and the largest exceeds the smallest by more than two decades (a full run's loss falling
  to 1e-3 beside a smoke run's stuck at 1 stays readable);
* a key whose value never changes within any run (a parameter count, a constant learning rate, a
  metric logged once) is not drawn: it is listed as text in a last panel, ``constants``
  (``model/params = 12345``; one value per run when the runs differ).

``--keys`` keeps keys, groups or globs (``--keys train/loss eval``, ``--keys 'eval/*'``).
A finished run already holds its own picture, ``WORKDIR/curves.png`` (written by the trainer).
Exit status: 0 written, 2 for a bad argument (a missing workdir, no matching metric).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

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
    runs: one ``{key: (steps, values)}`` per run (``iclr26_jax.core.curves.read_series``).
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
  left alone.

  Args:
    workdirs: run workdirs (or metrics files); each run is one colour and line style.
    keys: keep only these keys / groups / globs (``curves.select_keys``); default: every key.
    labels: a legend name per run (default: the workdir's base name).

  Returns:
    ``matplotlib.figure.Figure``: one axes per drawn key (its title the key), then one axes
    titled ``constants`` with the axis turned off when some key is constant, then unused grid
    cells (turned off, untitled).

  Raises:
    ValueError: no run given, labels of the wrong length, or no metric left to plot.
    FileNotFoundError: a workdir without a metrics file.
  """
  from iclr26_jax.core import curves

  if not workdirs:
    raise ValueError("plot needs at least one workdir")
  if labels is not None and len(labels) != len(workdirs):
    raise ValueError(f"labels: got {len(labels)} names for {len(workdirs)} workdirs")
  runs = [curves.read_series(w) for w in workdirs]
  if labels is None:
    labels = [os.path.basename(os.path.normpath(w)) or w for w in workdirs]
  chosen = curves.select_keys([k for s in runs for k in s], keys)
  if not chosen:
    have = sorted({k for s in runs for k in s})
    raise ValueError(
      f"no metric to plot (keys={list(keys) if keys else None}; the runs hold {have})"
    )
  ordered = [k for _, group in curves.group_keys(chosen) for k in group]
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
    if curves.spans_decades(values_all):
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


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(
    prog="python -m experiments.plot",
    description="Plot the metrics.jsonl curves of one or more run workdirs into one PNG.",
  )
  parser.add_argument("workdirs", nargs="+", help="run workdirs (or metrics.jsonl files)")
  parser.add_argument("--out", required=True, help="the PNG to write")
  parser.add_argument("--keys", nargs="+", default=None, help="keys, groups or globs to keep")
  parser.add_argument("--labels", nargs="+", default=None, help="a legend name per workdir")
  args = parser.parse_args(argv)

  from iclr26_jax.core import curves

  for w in args.workdirs:
    if not os.path.exists(curves._metrics_path(w)):
      print(f"error: no metrics file {curves._metrics_path(w)}", file=sys.stderr)
      return 2
  try:
    out = plot_runs(args.workdirs, out=args.out, keys=args.keys, labels=args.labels)
  except ValueError as e:
    print(f"error: {e}", file=sys.stderr)
    return 2
  print(out)
  return 0


if __name__ == "__main__":
  sys.exit(main())
