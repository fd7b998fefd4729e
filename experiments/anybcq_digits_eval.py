"""AnyBCQ quick task metric: an MLP on scikit-learn's bundled digits, test accuracy vs bits.

  python -m experiments.anybcq_digits_eval [--steps=300 --rounds=20 --symmetric --seeds=1]

Trains the 64-256-256-10 MLP of ``experiments/anybcq_digits.py`` (full-batch Adam) for each seed
0..seeds-1, quantizes its three Dense kernels weight-only with AnyBCQ, fixed-precision BCQ and RTN,
and prints a Markdown table of test accuracy at FP and 4 / 3 / 2 bits per seed and method.
"""

from __future__ import annotations

import time

from absl import flags

from experiments import _cli

NAMES = ("steps", "rounds", "symmetric", "seeds")


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
  """Defines this tool's flags in ``fv`` (called only when the file is the program)."""
  flags.DEFINE_integer(
    "steps", 300, "Full-batch Adam training steps.", lower_bound=1, flag_values=fv
  )
  flags.DEFINE_integer(
    "rounds", 20, "Alternating refinement rounds T of BCQ / AnyBCQ.", lower_bound=0, flag_values=fv
  )
  flags.DEFINE_bool("symmetric", False, "Symmetric BCQ (beta = 0).", flag_values=fv)
  flags.DEFINE_integer(
    "seeds", 1, "Number of training seeds (0..n-1).", lower_bound=1, flag_values=fv
  )


def run(*, steps: int = 300, rounds: int = 20, symmetric: bool = False, seeds: int = 1) -> None:
  """Prints the split sizes, then one table row per (seed, method) and each seed's time."""
  from experiments import anybcq_digits as digits_eval
  from iclr26_jax.anybcq.lm import METHODS

  xtr, ytr, xte, yte = digits_eval.load_split()
  print(f"digits: {len(ytr)} train, {len(yte)} test")
  print("| seed | method | FP | 4-bit | 3-bit | 2-bit |\n|---|---|---|---|---|---|")
  for s in range(seeds):
    t0 = time.time()
    params = digits_eval.train_mlp(xtr, ytr, steps, seed=s)
    r = digits_eval.evaluate(params, xte, yte, rounds=rounds, asymmetric=not symmetric)
    for m in METHODS:
      print(
        f"| {s} | {m} | {r['fp']:.4f} | {r[m][4]:.4f} | {r[m][3]:.4f} | {r[m][2]:.4f} |", flush=True
      )
    print(f"(seed {s}: {time.time() - t0:.0f} s)")


def main(argv, fv: flags.FlagValues = flags.FLAGS):
  _cli.no_arguments(argv)
  run(**_cli.values(fv, NAMES))


if __name__ == "__main__":
  define_flags()
  _cli.run(main)
