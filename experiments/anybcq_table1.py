"""The storage arithmetic of AnyBCQ's Table 1 (Park et al., ICLR 2026, arXiv 2510.10467):
``anybcq.memory`` applied to the 224 decoder linears of Llama-3.1-8B, beside the paper's figures.

  python -m experiments.anybcq_table1

The paper counts the scales α only; ``alpha_beta`` adds the asymmetric offsets β.
"""

from __future__ import annotations

from typing import Sequence

from iclr26_jax.anybcq import memory

# Paper Table 1 (Llama-3.1-8B, GB): (scales, binary) per fixed-precision BCQ model and for AnyBCQ 2..4.
PAPER_TABLE1_GB = {
  "bcq2": (0.24, 1.95),
  "bcq3": (0.36, 2.92),
  "bcq4": (0.49, 3.89),
  "bcq_total": 9.85,
  "anybcq": (1.09, 3.89),
  "anybcq_total": 4.99,
}


def llama31_8b_linear_shapes() -> list[tuple[int, int]]:
  """``(N, K)`` of the 224 decoder linears of Llama-3.1-8B (32 layers x q, k, v, o, gate, up, down).

  hidden 4096, 32 query / 8 key-value heads of 128, FFN 14336; embeddings and the LM head are not
  quantized. 6.98e9 weights in all.
  """
  h, kv, f = 4096, 1024, 14336
  layer = [(h, h), (kv, h), (kv, h), (h, h), (f, h), (f, h), (h, f)]
  return layer * 32


def table1(
  shapes: Sequence[tuple[int, int]] | None = None,
  group_size: int = 128,
  bits: Sequence[int] = (2, 3, 4),
  gb: float = 1e9,
) -> dict:
  """Table 1 arithmetic: scales and binary sizes (in units of ``gb`` bytes) per model.

  Args:
    shapes: linear ``(N, K)`` shapes (default ``llama31_8b_linear_shapes()``).
    group_size: g; bits: the widths; gb: bytes per reported unit (1e9 = GB).
  Returns:
    ``{"alpha_only": conv, "alpha_beta": conv}``, each ``conv`` a dict with keys ``"bcq{b}"`` ->
    ``(scales, binary)``, ``"bcq_total"``, ``"anybcq"`` -> ``(scales, binary)``, ``"anybcq_total"``
    and ``"saving"`` (1 - anybcq_total / bcq_total).
  """
  shapes = llama31_8b_linear_shapes() if shapes is None else list(shapes)
  bits = tuple(bits)
  out = {}
  for name, asym in (("alpha_only", False), ("alpha_beta", True)):
    conv = {}
    total_fixed = 0.0
    for b in bits:
      m = memory.model_nbytes(shapes, (b,), group_size, asymmetric=asym)
      conv[f"bcq{b}"] = ((m.alpha_bytes + m.beta_bytes) / gb, m.planes_bytes / gb)
      total_fixed += m.total_bytes / gb
    conv["bcq_total"] = total_fixed
    m = memory.model_nbytes(shapes, bits, group_size, asymmetric=asym)
    conv["anybcq"] = ((m.alpha_bytes + m.beta_bytes) / gb, m.planes_bytes / gb)
    conv["anybcq_total"] = m.total_bytes / gb
    conv["saving"] = 1.0 - conv["anybcq_total"] / total_fixed
    out[name] = conv
  return out


def main(argv):
  del argv
  ours = table1()
  print("| model | scales (GB) | binary (GB) | paper scales | paper binary |")
  print("| --- | --- | --- | --- | --- |")
  for key in ("bcq2", "bcq3", "bcq4", "anybcq"):
    (s, b), (ps, pb) = ours["alpha_only"][key], PAPER_TABLE1_GB[key]
    print(f"| {key} | {s:.2f} | {b:.2f} | {ps:.2f} | {pb:.2f} |")
  print(
    f"totals: BCQ {ours['alpha_only']['bcq_total']:.2f} GB (paper {PAPER_TABLE1_GB['bcq_total']}),"
    f" AnyBCQ {ours['alpha_only']['anybcq_total']:.2f} GB (paper {PAPER_TABLE1_GB['anybcq_total']});"
    f" with offsets β: AnyBCQ {ours['alpha_beta']['anybcq_total']:.2f} GB"
  )


if __name__ == "__main__":
  from experiments import _cli

  _cli.app_run(main)
