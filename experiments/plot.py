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
A run finished by ``python -m experiments.main`` already holds its own picture, ``WORKDIR/curves.png``.
Exit status: 0 written, 2 for a bad argument (a missing workdir, no matching metric).
"""

from __future__ import annotations

import argparse
import os
import sys

from experiments import curves
from experiments.curves import (  # noqa: F401 (the CLI's layout, re-exported)
  MAX_CONSTANT_LINES,
  constant_lines,
  draw,
  plot_runs,
  split_constants,
)


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
