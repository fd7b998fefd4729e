"""Learning curves of one or more runs, without writing code.

  python -m experiments.plot WORKDIR [WORKDIR ...] [--keys KEY ...] [--labels NAME ...] --out F.png

Reads each workdir's ``metrics.jsonl`` and writes one PNG: a panel per metric group (the key's
prefix before ``/``: ``train``, ``eval``, ``stage``, ...), the runs overlaid (one line style per
run), a logarithmic y axis where a positive series spans more than two decades.
``--keys`` keeps keys, groups or globs (``--keys train/loss eval``, ``--keys 'eval/*'``).
A finished run already holds its own picture, ``WORKDIR/curves.png`` (written by the trainer).
Exit status: 0 written, 2 for a bad argument (a missing workdir, no matching metric).
"""

from __future__ import annotations

import argparse
import os
import sys


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
    out = curves.plot_runs(args.workdirs, out=args.out, keys=args.keys, labels=args.labels)
  except ValueError as e:
    print(f"error: {e}", file=sys.stderr)
    return 2
  print(out)
  return 0


if __name__ == "__main__":
  sys.exit(main())
