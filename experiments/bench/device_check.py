"""One-command device check of both Pallas kernels: correctness, then timing, as a Markdown table.

    python -m experiments.bench.device_check [--out device_check.md]      # on one GPU or TPU host

For every production block row of ``bitplane_matmul`` and ``spline_lookup`` on the host's backend
(TPU: Mosaic kernels; CUDA GPU: Triton kernels, and on Hopper+ the Mosaic GPU lookup-table decode
kernel as the "lut" bit-plane row, M = 1), at the benchmark shapes:
1. correctness: the kernel (``impl="pallas"``) against the pure-jnp reference (``impl="xla"``):
   max |error| divided by the error scale (bit-plane: max of |x|·|W|; spline: max |y|);
2. timing (median of ``--reps``): the kernel, the XLA path and the same-shape dense op (bf16
   (M, K)·(K, N) for the bit-plane op; f32 (B, 2P)·(2P, Q) for the spline layer), with the roofline
   lower bound of the kernel call on this device class (experiments/bench/_roofline.py).
Budget: about 2-4 minutes on one H200 or TPU v5e host (14 compiled functions, 10 timed calls each).

On a CPU host (``--tiny``, the test) the kernels run in interpret mode on tiny shapes: a code-path
check, and the time columns say so.
"""

from __future__ import annotations

import functools
import os
import sys

if __package__ in (None, ""):
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from absl import flags
import jax  # pylint: disable=g-import-not-at-top
import jax.numpy as jnp
import numpy as np

from experiments import _cli
from experiments.bench import _roofline
from experiments.bench._timing import median_time
from kernels_pallas import _backend
from kernels_pallas.bitplane_matmul import blocks as bblocks
from kernels_pallas.bitplane_matmul import format as fmt
from kernels_pallas.bitplane_matmul import ops as bops
from kernels_pallas.bitplane_matmul import reference as bref
from kernels_pallas.spline_lookup import blocks as sblocks
from kernels_pallas.spline_lookup import ops as sops
from kernels_pallas.spline_lookup.grid import SigmaGrid

BUCKET_M = {"lut": 1, "decode": 1, "small": 64, "prefill": 512}
BUCKET_G = {"small": 8, "medium": 14, "large": 26, "huge": 40}
PRECISIONS = (2, 3, 4)
HEADER = (
  "| op | row | shape | max err / scale | kernel µs | XLA µs | dense µs | kernel/dense "
  "| roofline µs (H200 / v5e) |"
)


def _platform() -> str:
  b = jax.default_backend()
  return {"tpu": "tpu", "gpu": "gpu"}.get(b, "cpu")


def _us(t):
  return f"{t * 1e6:.1f}" if t is not None else "n/a"


def _roof(nbytes, flops, vector_ops=0.0):
  return " / ".join(
    f"{_roofline.implied_seconds(nbytes, flops, d, vector_ops)[0] * 1e6:.2f}"
    for d in _roofline.PEAKS
  )


def bitplane_rows(kplat, interpret, tiny, buckets, reps, warmup):
  out = []
  k = n = 256 if tiny else 4096
  planes, alpha, beta, _ = fmt.random_bitplane_layer(
    0, k, n, num_planes=4, precisions=PRECISIONS, group_size=128, asymmetric=True, dtype=jnp.float16
  )
  rng = np.random.default_rng(1)
  w_dense = jnp.asarray(rng.standard_normal((k, n)) * 0.02, jnp.bfloat16)
  dense = jax.jit(lambda x, w: jnp.dot(x, w, preferred_element_type=jnp.float32))
  op = functools.partial(
    bops.bitplane_matmul, impl="pallas", platform=kplat, interpret=interpret, out_dtype=jnp.float32
  )
  triton_decode = bblocks.table_row("gpu", 1).config
  xla = jax.jit(functools.partial(bops.bitplane_matmul, impl="xla", out_dtype=jnp.float32))
  for bucket in buckets:
    m = min(BUCKET_M[bucket], 16) if tiny else BUCKET_M[bucket]
    # On Hopper the op picks the LUT kernel up to LUT_MAX_M rows: the "decode" row then names the
    # Triton decode kernel explicitly so both are timed.
    cfg = triton_decode if (kplat == "gpu" and bucket == "decode") else None
    kern = jax.jit(functools.partial(op, config=cfg))
    x = jnp.asarray(rng.standard_normal((m, k)), jnp.bfloat16)
    for p in (2, 4):
      pp = jnp.int32(p)
      y = kern(x, planes, alpha, beta, pp)
      y_ref = xla(x, planes, alpha, beta, pp)
      w_abs = jnp.abs(
        bref.dequantize(planes, alpha.astype(jnp.float32), beta.astype(jnp.float32), p)
      )
      scale = float(jnp.max(jnp.abs(x.astype(jnp.float32)) @ w_abs))
      err = float(jnp.max(jnp.abs(y - y_ref))) / scale
      t_k = median_time(kern, x, planes, alpha, beta, pp, warmup=warmup, reps=reps)
      t_x = median_time(xla, x, planes, alpha, beta, pp, warmup=warmup, reps=reps)
      t_d = median_time(dense, x, w_dense, warmup=warmup, reps=reps)
      variant = bblocks.table_row(kplat, m).config.variant
      nbytes = p * k * n // 8 + (p + 1) * (k // 128) * n * 2 + m * k * 2 + m * n * 4
      if bucket == "lut":
        roof = _roof(
          _roofline.bitplane_lut_bytes(m, k, n, p, 128),
          0.0,
          {"H200": _roofline.bitplane_lut_unit_ops(m, k, n, p)},
        )
        variant = "lut"
      else:
        roof = _roof(
          nbytes,
          _roofline.bitplane_flops(m, k, n, p, variant),
          _roofline.bitplane_vector_ops(
            m, k, n, p, variant, bblocks.pick_config(kplat, m, k, n, 128, 2).bm
          ),
        )
      out.append(
        dict(
          op="bitplane_matmul",
          row=f"{bucket} ({variant}) p={p}",
          shape=f"M={m} K={k} N={n}",
          err=err,
          kernel=t_k,
          xla=t_x,
          dense=t_d,
          roof=roof,
        )
      )
  return out


def spline_rows(kplat, interpret, tiny, buckets, reps, warmup):
  out = []
  b, n_in, q = (256, 16, 128) if tiny else (4096, 512, 512)
  pairs = n_in // 2
  rng = np.random.default_rng(2)
  x2 = jnp.asarray(rng.standard_normal((b, n_in)), jnp.float32)
  w = jnp.asarray(rng.standard_normal((n_in, q)) / np.sqrt(n_in), jnp.float32)
  dense = jax.jit(lambda x, w: jnp.dot(x, w, precision=jax.lax.Precision.HIGHEST))
  xp = x2.reshape(b, pairs, 2)
  for bucket in buckets:
    G = BUCKET_G[bucket]
    grid = SigmaGrid(G)
    table = jnp.asarray(rng.uniform(-0.1, 0.1, (pairs, G + 1, G + 1, q)), jnp.float32)
    kern = jax.jit(
      functools.partial(
        sops.spline_lookup, grid=grid, impl="pallas", platform=kplat, interpret=interpret
      )
    )
    xla = jax.jit(functools.partial(sops.spline_lookup, grid=grid, impl="xla"))
    y, y_ref = kern(xp, table), xla(xp, table)
    err = float(jnp.max(jnp.abs(y - y_ref)) / jnp.max(jnp.abs(y_ref)))
    t_k = median_time(kern, xp, table, warmup=warmup, reps=reps)
    t_x = median_time(xla, xp, table, warmup=warmup, reps=reps)
    t_d = median_time(dense, x2, w, warmup=warmup, reps=reps)
    variant = sblocks.table_row(kplat, G).config.variant
    c_pad = sblocks.corner_pad(G)
    flops = (
      _roofline.spline_gather_flops(b, pairs, q)
      if variant == "gather"
      else _roofline.spline_matrix_flops(b, pairs, q, c_pad, passes=3 if kplat == "tpu" else 1)
    )  # bf16x3 dots
    nbytes, vector_ops = _roofline.spline_bytes(b, pairs, q, G), 0
    if kplat == "tpu":  # per-unit counts (`_roofline.spline_tpu_forward_times`), table per B-block
      bb = sblocks.plan("tpu", G, b, pairs, q).config.fwd_bb
      if variant == "gather":  # the lane permutes bound it, not the FLOPs
        nbytes = _roofline.spline_tpu_gather_bytes(b, pairs, q, G, c_pad, bb)
        vector_ops = {"TPU v5e": _roofline.spline_tpu_gather_unit_ops(b, pairs, q, c_pad)}
      else:  # the MXU passes, the matrix build on the VALU
        nbytes = _roofline.spline_tpu_matrix_bytes(b, pairs, q, G, c_pad, bb)
        build = _roofline.SPLINE_TPU_MATRIX_BUILD_OPS * b * pairs * c_pad
        vector_ops = {"TPU v5e": {"valu": build}}
    out.append(
      dict(
        op="spline_lookup",
        row=f"{bucket} ({variant}) G={G}",
        shape=f"B={b} {n_in}->{q}",
        err=err,
        kernel=t_k,
        xla=t_x,
        dense=t_d,
        roof=_roof(nbytes, flops, vector_ops),
      )
    )
  return out


def run(*, tiny=False, bitplane_buckets=None, spline_buckets=None, reps=10, warmup=2):
  """Returns (markdown lines, row dicts). On a CPU host the kernels run in interpret mode."""
  plat = _platform()
  interpret = plat == "cpu"
  kplat = "tpu" if plat == "cpu" else plat
  lut = (
    ["lut"]
    if plat == "gpu"
    and bblocks.lut_eligible(1, 4096, _backend.gpu_capability())
    and not bitplane_buckets
    else []
  )
  bitplane_buckets = bitplane_buckets or lut + [r.bucket for r in bblocks.BLOCK_TABLE[kplat]]
  spline_buckets = spline_buckets or [r.bucket for r in sblocks.BLOCK_TABLE[kplat]]
  rows = bitplane_rows(kplat, interpret, tiny, bitplane_buckets, reps, warmup) + spline_rows(
    kplat, interpret, tiny, spline_buckets, reps, warmup
  )
  dev = jax.devices()[0].device_kind
  lines = [
    f"Device check on {dev} ({plat}; {kplat} kernels"
    f"{', interpret mode: times are not timings' if interpret else ''}).",
    "",
    HEADER,
    "|---|---|---|---|---|---|---|---|---|",
  ]
  for r in rows:
    ratio = f"{r['kernel'] / r['dense']:.2f}" if not interpret else "n/a"
    lines.append(
      f"| {r['op']} | {r['row']} | {r['shape']} | {r['err']:.2e} | {_us(r['kernel'])} "
      f"| {_us(r['xla'])} | {_us(r['dense'])} | {ratio} | {r['roof']} |"
    )
  return lines, rows


NAMES = ("out", "tiny", "bitplane_rows", "spline_rows", "reps")


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
  """Defines this tool's flags in ``fv`` (called only when the file is the program)."""
  flags.DEFINE_string("out", "device_check.md", "The Markdown table's path.", flag_values=fv)
  flags.DEFINE_boolean("tiny", False, "Tiny shapes (CPU interpret-mode check).", flag_values=fv)
  flags.DEFINE_list(
    "bitplane_rows", [], "Bit-plane block buckets to run (default: all).", flag_values=fv
  )
  flags.DEFINE_list(
    "spline_rows", [], "Spline block buckets to run (default: all).", flag_values=fv
  )
  flags.DEFINE_integer("reps", 10, "Timed repetitions per row.", lower_bound=1, flag_values=fv)


def main(argv, fv: flags.FlagValues = flags.FLAGS) -> None:
  """Runs the rows, prints the table and writes it to ``--out``."""
  _cli.no_arguments(argv)
  a = _cli.values(fv, NAMES)
  lines, _ = run(
    tiny=a["tiny"],
    bitplane_buckets=[v for v in a["bitplane_rows"] if v] or None,
    spline_buckets=[v for v in a["spline_rows"] if v] or None,
    reps=a["reps"],
    warmup=1 if a["tiny"] else 2,
  )
  text = "\n".join(lines) + "\n"
  print(text)
  with open(a["out"], "w") as fh:
    fh.write(text)


if __name__ == "__main__":
  define_flags()
  _cli.run(main)
