r"""Benchmark: the AnyBCQ bit-plane matmul against the XLA reference and a dense bf16 matmul.

AnyBCQ (Park et al., ICLR 2026; reference CUDA kernels github.com/naver-aics/anybcq, whose Table 3
reports GEMV speedups over cuBLAS FP16 of 1.33/1.20/1.12x at 4096x4096 and 2.67/2.22/1.87x at
14336x4096 for 2/3/4 bits on an A100). For each shape (N x K = out x in features, the paper's
notation), each M and each precision p this script times, in the same run,

  * kernel: ``bitplane_matmul(impl="pallas")`` (Mosaic on TPU, Triton on GPU; not run on CPU),
  * xla:    ``bitplane_matmul(impl="xla")`` (dequantize W^(p) in f32, then one matmul),
  * dense:  ``jnp.dot`` of bf16 x and a bf16 (K, N) weight,

and prints the time ratios and the achieved bandwidth as a fraction of the device's measured copy
bandwidth. Bytes moved per call: the p planes read (p*K*N/8), the scales read (alpha p*K/g*N and
beta K/g*N, 2 bytes each), the activations (M*K*2) and the output (M*N*2); dense counts its bf16
weight (K*N*2) instead of planes and scales. The xla column uses the same byte count as the kernel
(the bytes a bit-plane format must move), so its fraction shows how far the fallback is from it.

Shapes: ``--shapes=paper`` is 4096x4096, 14336x4096, 4096x14336, 8192x8192 (M = 1, 16, 256;
p = 2, 3, 4); ``--shapes=quick`` is 512x512 and 1024x2048. The default is ``paper`` on GPU/TPU and
``quick`` on CPU, where only the reference paths run and the paper shapes take minutes (the f32
dequantize of a 14336x4096 matrix per call). ``--variants`` also times both kernel variants
(partials, dequant) at every M to locate their crossover.

Run from the repository root:
  python -m benchmarks.bitplane_matmul --quick
  python -m benchmarks.bitplane_matmul --shapes=paper --ms=1,16,256 --precisions=2,3,4
"""

from __future__ import annotations

import dataclasses
import os
import sys
import types

if __package__ in (None, ""):  # run as a file: make the repository root importable
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app, flags  # pylint: disable=g-import-not-at-top

from experiments import _cli  # pylint: disable=g-import-not-at-top
from benchmarks import _roofline
from benchmarks._timing import median_time  # pylint: disable=g-import-not-at-top
import jax  # pylint: disable=g-import-not-at-top
import jax.numpy as jnp
import numpy as np

from kernels_pallas import _backend
from kernels_pallas.bitplane_matmul import blocks
from kernels_pallas.bitplane_matmul import format as fmt
from kernels_pallas.bitplane_matmul import ops

PAPER_SHAPES = ((4096, 4096), (14336, 4096), (4096, 14336), (8192, 8192))  # (N, K)
QUICK_SHAPES = ((512, 512), (1024, 2048))
NUM_PLANES = 4
PRECISIONS = (2, 3, 4)


def copy_bandwidth(nbytes: int, reps: int = 5) -> float:
  """Measured device copy bandwidth (bytes/s): read + write of an ``nbytes`` uint32 array."""
  a = jnp.zeros((nbytes // 4,), jnp.uint32)
  f = jax.jit(lambda v: v + jnp.uint32(1))
  t = median_time(f, a, warmup=2, reps=reps)
  return 2 * a.size * 4 / t


def bitplane_bytes(m: int, k: int, n: int, p: int, g: int, has_beta: bool) -> int:
  """Bytes a precision-p call must move: p planes, scales (2 bytes), bf16 activations and output."""
  scales = p * (k // g) * n * 2 + ((k // g) * n * 2 if has_beta else 0)
  return p * k * n // 8 + scales + m * k * 2 + m * n * 2


def dense_bytes(m: int, k: int, n: int) -> int:
  return k * n * 2 + m * k * 2 + m * n * 2


def parse_ints(text: str) -> tuple[int, ...]:
  return tuple(int(v) for v in text.split(",") if v.strip())


def parse_shapes(text: str, platform: str) -> tuple[tuple[int, int], ...]:
  if text == "auto":
    text = "quick" if platform == "cpu" else "paper"
  if text == "paper":
    return PAPER_SHAPES
  if text == "quick":
    return QUICK_SHAPES
  shapes = []
  for item in text.split(","):
    n, k = item.lower().split("x")
    shapes.append((int(n), int(k)))
  return tuple(shapes)


def run(
  shapes,
  ms,
  precisions,
  *,
  group_size=128,
  asymmetric=True,
  reps=10,
  warmup=2,
  variants=False,
  interpret=False,
):
  """Times every (shape, M, p) and returns a list of result dicts (also printed as a table).

  ``interpret`` runs the kernel columns in Pallas interpret mode (a code-path check on CPU; those
  times mean nothing).
  """
  platform = _backend.backend()
  run_kernel = interpret or platform in ("gpu", "tpu")
  kernel_platform = "tpu" if platform == "tpu" else "gpu"
  bw = copy_bandwidth((256 << 20) if platform != "cpu" else (64 << 20))
  print(
    f"device: {jax.devices()[0].device_kind} ({platform}); measured copy bandwidth "
    f"{bw / 1e9:.1f} GB/s; g = {group_size}, {'asymmetric' if asymmetric else 'symmetric'}, "
    f"bf16 activations and scales"
  )
  if not run_kernel:
    print(
      "kernel columns: n/a (Pallas kernels run on TPU/GPU only; interpret mode is not a timing)"
    )
  elif interpret:
    print("kernel columns: Pallas interpret mode (code-path check only; not a timing)")
  header = (
    f"{'N x K':>12} {'M':>4} {'p':>2} {'variant':>9} {'kernel us':>10} {'xla us':>10} "
    f"{'dense us':>10} {'xla/kern':>8} {'dense/kern':>10} {'dense/xla':>9} "
    f"{'kern BW':>7} {'xla BW':>7} {'dense BW':>8}"
  )
  print(header)
  print("-" * len(header))
  results = []
  mm = jax.jit(lambda x, w: jnp.dot(x, w))
  for n, k in shapes:
    planes, alpha, beta, precs = fmt.random_bitplane_layer(
      0,
      k,
      n,
      num_planes=NUM_PLANES,
      precisions=PRECISIONS,
      group_size=group_size,
      asymmetric=asymmetric,
      dtype=jnp.bfloat16,
    )
    rng = np.random.default_rng(1)
    w_dense = jnp.asarray(rng.standard_normal((k, n), np.float32) * 0.02, jnp.bfloat16)
    for m in ms:
      x = jnp.asarray(rng.standard_normal((m, k), np.float32), jnp.bfloat16)
      t_dense = median_time(mm, x, w_dense, warmup=warmup, reps=reps)
      xla = jax.jit(lambda x, pl_, a, b, p: ops.bitplane_matmul(x, pl_, a, b, p, impl="xla"))
      kernel_fns = {}
      if run_kernel:
        row = blocks.table_row(kernel_platform, m).config
        names = ("partials", "dequant") if variants else (row.variant,)
        for name in names:
          cfg = dataclasses.replace(row, variant=name)
          kernel_fns[name] = jax.jit(
            lambda x, pl_, a, b, p, cfg=cfg: ops.bitplane_matmul(
              x,
              pl_,
              a,
              b,
              p,
              impl="pallas",
              platform=kernel_platform,
              config=cfg,
              interpret=interpret,
            )
          )
      for p in precisions:
        if p not in precs:
          raise ValueError(f"--precisions: {p} is not a stored precision {precs}")
        p_arr = jnp.int32(p)
        t_xla = median_time(xla, x, planes, alpha, beta, p_arr, warmup=warmup, reps=reps)
        nbytes = bitplane_bytes(m, k, n, p, group_size, asymmetric)
        for name, fn in kernel_fns.items() if kernel_fns else [("-", None)]:
          t_k = (
            median_time(fn, x, planes, alpha, beta, p_arr, warmup=warmup, reps=reps) if fn else None
          )
          r = dict(
            n=n,
            k=k,
            m=m,
            p=p,
            variant=name,
            kernel_s=t_k,
            xla_s=t_xla,
            dense_s=t_dense,
            kernel_bw=(nbytes / t_k / bw) if t_k else None,
            xla_bw=nbytes / t_xla / bw,
            dense_bw=dense_bytes(m, k, n) / t_dense / bw,
          )
          results.append(r)
          fmt_us = lambda t: f"{t * 1e6:10.1f}" if t else f"{'n/a':>10}"
          ratio = lambda a, b: f"{a / b:.2f}" if (a and b) else "n/a"
          pct = lambda v: f"{100 * v:.0f}%" if v is not None else "n/a"
          print(
            f"{f'{n}x{k}':>12} {m:>4} {p:>2} {name:>9} {fmt_us(t_k)} {fmt_us(t_xla)} "
            f"{fmt_us(t_dense)} {ratio(t_xla, t_k):>8} {ratio(t_dense, t_k):>10} "
            f"{ratio(t_dense, t_xla):>9} {pct(r['kernel_bw']):>7} {pct(r['xla_bw']):>7} "
            f"{pct(r['dense_bw']):>8}"
          )
          vname = name if name != "-" else blocks.table_row(kernel_platform, m).config.variant
          bm = blocks.pick_config(kernel_platform, m, k, n, group_size, 2).bm
          print(
            "    "
            + _roofline.line(
              f"{vname} p={p}",
              nbytes,
              _roofline.bitplane_flops(m, k, n, p, vname),
              _roofline.bitplane_vector_ops(m, k, n, p, vname, bm),
            )
          )
      if m <= blocks.LUT_MAX_M:  # the Hopper LUT kernel (H200 only; counted SASS per unit)
        for p in precisions:
          t, bound = _roofline.implied_seconds(
            _roofline.bitplane_lut_bytes(m, k, n, p, group_size, asymmetric),
            0.0,
            "H200",
            {"H200": _roofline.bitplane_lut_unit_ops(m, k, n, p)},
          )
          print(f"    roofline lut p={p}: H200 >= {t * 1e6:.2f} us ({bound})")
      print("    " + _roofline.line("bf16 dense", dense_bytes(m, k, n), 2 * m * k * n))
  return results


NAMES = (
  "shapes",
  "quick",
  "full",
  "ms",
  "precisions",
  "group_size",
  "symmetric",
  "variants",
  "interpret",
  "reps",
  "warmup",
)


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
  """Defines this tool's flags in ``fv`` (called only when the file is the program)."""
  flags.DEFINE_string(
    "shapes",
    "auto",
    "auto | paper | quick | comma-separated NxK list (N = out features). auto: 'paper' on "
    "GPU/TPU, 'quick' on CPU (only the XLA reference and the dense matmul run there; the paper "
    "shapes take minutes on a small CPU).",
    flag_values=fv,
  )
  flags.DEFINE_bool(
    "quick",
    False,
    "Small shapes (unless --shapes is given) and fewer repetitions: a CPU sanity run.",
    flag_values=fv,
  )
  flags.DEFINE_bool("full", False, "The paper's shapes even on CPU (slow there).", flag_values=fv)
  flags.DEFINE_string("ms", "1,16,256", "Comma-separated activation rows M.", flag_values=fv)
  flags.DEFINE_string(
    "precisions", "2,3,4", "Comma-separated precisions p (of 2, 3, 4).", flag_values=fv
  )
  flags.DEFINE_integer(
    "group_size", 128, f"Quantization group size, one of {fmt.GROUP_SIZES}.", flag_values=fv
  )
  flags.DEFINE_bool("symmetric", False, "No beta (symmetric BCQ).", flag_values=fv)
  flags.DEFINE_bool(
    "variants", False, "Time both kernel variants (partials, dequant) at every M.", flag_values=fv
  )
  flags.DEFINE_bool(
    "interpret",
    False,
    "Also run the kernel columns in interpret mode (CPU code-path check; the kernel times are "
    "meaningless).",
    flag_values=fv,
  )
  flags.DEFINE_integer("reps", 20, "Timed calls (median reported).", lower_bound=1, flag_values=fv)
  flags.DEFINE_integer("warmup", 3, "Warm-up calls before timing.", lower_bound=0, flag_values=fv)


def main(argv, fv: flags.FlagValues = flags.FLAGS):
  _cli.no_arguments(argv)
  args = types.SimpleNamespace(**_cli.values(fv, NAMES))
  if args.quick and args.full:
    raise app.UsageError("--quick and --full are exclusive")
  if args.quick:
    args.reps, args.warmup = 5, 1
    if args.shapes == "auto":
      args.shapes = "quick"
  if args.full and args.shapes == "auto":
    args.shapes = "paper"
  if args.group_size not in fmt.GROUP_SIZES:
    raise app.UsageError(f"--group_size must be one of {fmt.GROUP_SIZES}, got {args.group_size}")
  try:
    shapes = parse_shapes(args.shapes, _backend.backend())
    ms, precisions = parse_ints(args.ms), parse_ints(args.precisions)
  except ValueError as e:
    raise app.UsageError(f"--shapes, --ms, --precisions: {e}") from None
  run(
    shapes,
    ms,
    precisions,
    group_size=args.group_size,
    asymmetric=not args.symmetric,
    reps=args.reps,
    warmup=args.warmup,
    variants=args.variants,
    interpret=args.interpret,
  )


if __name__ == "__main__":
  define_flags()
  _cli.run(main)
