"""AnyBCQ on a tiny byte-level LM: validation perplexity at FP / 4 / 3 / 2 bits.

  python -m experiments.anybcq_lm --steps=2000 [--width=128 --depth=2 --heads=4 --context=128]
      [--group_size=128 --rounds=20 --symmetric --seed=0 --out=anybcq_out/lm]

Trains ``iclr26_jax.anybcq.lm.TinyLM`` on the offline docstring corpus (``anybcq.corpus``) through
the shared trainer (``iclr26_jax.anybcq.method``: the run ``python -m experiments.main
--config=experiments/configs/anybcq/lm.py`` makes with these settings), then quantizes the linears
of every block with AnyBCQ (one multi-precision weight), fixed-precision BCQ and RTN and reports
validation perplexity (bytes) per method and width. Progress goes to stderr; the table goes to
stdout and to ``OUT.md``, the numbers to ``OUT.json``.
"""

from __future__ import annotations

import sys
import time

from absl import app, flags, logging

from experiments import _cli

NAMES = (
  "steps",
  "batch",
  "lr",
  "width",
  "depth",
  "heads",
  "context",
  "group_size",
  "rounds",
  "symmetric",
  "seed",
  "out",
)


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
  """Defines this tool's flags in ``fv`` (called only when the file is the program)."""
  flags.DEFINE_integer("steps", 2000, "Training steps.", lower_bound=1, flag_values=fv)
  flags.DEFINE_integer("batch", 32, "Sequences per step.", lower_bound=1, flag_values=fv)
  flags.DEFINE_float(
    "lr", 3e-3, "Peak AdamW learning rate (warmup + cosine).", lower_bound=0.0, flag_values=fv
  )
  flags.DEFINE_integer(
    "width", 128, "Model width (a multiple of --heads).", lower_bound=1, flag_values=fv
  )
  flags.DEFINE_integer("depth", 2, "Transformer blocks.", lower_bound=1, flag_values=fv)
  flags.DEFINE_integer("heads", 4, "Attention heads.", lower_bound=1, flag_values=fv)
  flags.DEFINE_integer("context", 128, "Context length in bytes.", lower_bound=1, flag_values=fv)
  flags.DEFINE_integer(
    "group_size",
    128,
    "Quantization group size along the input dimension.",
    lower_bound=1,
    flag_values=fv,
  )
  flags.DEFINE_integer(
    "rounds", 20, "Alternating refinement rounds T of BCQ / AnyBCQ.", lower_bound=0, flag_values=fv
  )
  flags.DEFINE_bool("symmetric", False, "Symmetric BCQ (beta = 0).", flag_values=fv)
  flags.DEFINE_integer("seed", 0, "Initialisation and batch seed.", flag_values=fv)
  flags.DEFINE_string(
    "out",
    "anybcq_out/lm",
    "Results are also written to OUT.md (the table) and OUT.json (the numbers).",
    flag_values=fv,
  )


def run(
  *,
  steps: int = 2000,
  batch: int = 32,
  lr: float = 3e-3,
  width: int = 128,
  depth: int = 2,
  heads: int = 4,
  context: int = 128,
  group_size: int = 128,
  rounds: int = 20,
  symmetric: bool = False,
  seed: int = 0,
  out: str = "anybcq_out/lm",
) -> dict:
  """Trains and evaluates through the shared trainer (``anybcq.method.AnyBCQLMMethod`` in a
  temporary workdir: the run ``experiments.main`` makes of ``experiments/configs/anybcq/lm.py``
  with these settings); prints progress (stderr) and the table (stdout), writes ``out.md`` /
  ``out.json``. Returns the JSON record. ValueError for an invalid model shape."""
  import tempfile

  from iclr26_jax.anybcq import corpus as corpus_lib
  from iclr26_jax.anybcq import lm
  from iclr26_jax.anybcq import method as method_lib
  from iclr26_jax.core import trainer

  args = dict(
    steps=steps,
    batch=batch,
    lr=lr,
    width=width,
    depth=depth,
    heads=heads,
    context=context,
    group_size=group_size,
    rounds=rounds,
    symmetric=symmetric,
    seed=seed,
    out=out,
  )
  cfg = lm.LMConfig(width=width, depth=depth, heads=heads, context=context)
  bits = (2, 3, 4)
  config = method_lib.run_config(
    cfg,
    steps=steps,
    batch=batch,
    lr=lr,
    seed=seed,
    quant_eval="final",
    group_size=group_size,
    rounds=rounds,
    asymmetric=not symmetric,
  )
  t_start = time.time()

  def progress(message):
    print(f"[{time.time() - t_start:6.0f} s] {message}", file=sys.stderr, flush=True)

  corp = corpus_lib.load_corpus()
  train, valid = corp.train_bytes(), corp.valid_bytes()
  print(
    f"corpus: train {train.size} bytes ({len(corp.train)} lines), valid {valid.size} bytes "
    f"({len(corp.valid)} lines); {cfg}"
  )
  method = method_lib.AnyBCQLMMethod(config)
  method.progress = progress
  t0 = time.time()
  progress(
    f"training {steps} steps (the first includes compile), then validation perplexity "
    "at full precision and quantized"
  )
  with tempfile.TemporaryDirectory(prefix="anybcq_lm_") as workdir:
    ev = trainer.train(method, config, workdir).eval_metrics
  print(f"trained and evaluated {steps} steps in {time.time() - t0:.0f} s")
  fp = ev["eval/ppl_fp"]
  rows = {m: {p: ev[f"eval/ppl_{m}_{p}"] for p in bits} for m in lm.METHODS}
  sym = "symmetric" if symmetric else "asymmetric"
  lines = [
    f"validation perplexity (bytes), g={group_size}, T={rounds}, BCQ {sym}, weight-only",
    "| method | FP | 4-bit | 3-bit | 2-bit |",
    "|---|---|---|---|---|",
  ]
  lines += [
    f"| {m} | {fp:.3f} | {rows[m][4]:.3f} | {rows[m][3]:.3f} | {rows[m][2]:.3f} |"
    for m in lm.METHODS
  ]
  text = "\n".join(lines)
  print("\n" + text)
  record = {
    "args": args,
    "fp": fp,
    "perplexity": {m: {str(p): v for p, v in r.items()} for m, r in rows.items()},
  }
  _cli.write_results(out, text, record)
  progress(f"done; wrote {out}.md and {out}.json")
  return record


def main(argv, fv: flags.FlagValues = flags.FLAGS):
  _cli.no_arguments(argv)
  opts = _cli.values(fv, NAMES)
  if opts["width"] % opts["heads"]:
    raise app.UsageError(f"--width={opts['width']} must be a multiple of --heads={opts['heads']}")
  if "verbosity" in fv and not fv["verbosity"].present:
    logging.set_verbosity(logging.WARNING)  # the trainer's Orbax logs at INFO (as experiments.main)
  run(**opts)


if __name__ == "__main__":
  define_flags()
  _cli.run(main)
