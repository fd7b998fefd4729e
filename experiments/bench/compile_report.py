"""Compiled-code facts for every production block row of both kernels (and the TPU spline gather rows),
on a host without a chip.

    python -m experiments.bench.compile_report [--tpu=v5e,v6e] [--nogpu] [--only spline] [--out report.md]

* TPU: ``jax.jit(f).lower().compile()`` through libtpu for each generation (forward; forward + VJP),
  reporting pass / fail (with Mosaic's message) and the executable's memory analysis.
* GPU (Hopper LUT): the Mosaic GPU decode kernel compiled for a compile-only H200 by the CUDA
  plugin; ptxas registers / spills and PTX / SASS instructions per (weight, plane) per thread
  (``_targets.lut_facts``: hot loop, and whole kernel at M = 1, p = 2).
* GPU: each Triton kernel compiled to sm_90a with the triton wheel; registers, spill bytes, shared
  memory, tensor-core instructions (mma.sync / wgmma), scalar FP32 FMAs, int -> float converts and
  the instructions per thread in the innermost MMA loop (``mma_loop_instr``; for the bit-plane
  kernels the plane loop: / (256 · BN / (32 · num_warps)) = instructions per (weight, plane)).

Needs the ``[compile]`` extra (libtpu, triton). Shapes as in tests/kernels_pallas/test_compile_targets.py.
A full run (both TPU generations, every GPU kernel) takes a few minutes on a 2-core host.
"""

from __future__ import annotations

import functools
import os
import sys
import time

if __package__ in (None, ""):
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from absl import flags
import jax  # pylint: disable=g-import-not-at-top
import jax.numpy as jnp

from experiments import _cli
from experiments.bench import _targets
from kernels_pallas.bitplane_matmul import blocks as bblocks
from kernels_pallas.bitplane_matmul import ops as bops
from kernels_pallas.spline_lookup import blocks as sblocks
from kernels_pallas.spline_lookup import ops as sops
from kernels_pallas.spline_lookup.grid import SigmaGrid

SDS = jax.ShapeDtypeStruct
BUCKET_M = {"decode": 1, "small": 64, "prefill": 512}
BUCKET_G = {"small": 8, "medium": 14, "large": 26, "huge": 40}
K = N = 1024
PRECISIONS = (2, 3, 4)


def _bp_specs(m, x_dtype, s_dtype):
  return (
    SDS((m, K), x_dtype),
    SDS((4, K // 32, N), jnp.uint32),
    SDS((sum(PRECISIONS), K // 128, N), s_dtype),
    SDS((len(PRECISIONS), K // 128, N), s_dtype),
    SDS((), jnp.int32),
  )


def _with_vjp(op, n_diff):
  def f(*args):
    y, vjp = jax.vjp(lambda *d: op(*d, *args[n_diff:-1]), *args[:n_diff])
    return y, vjp(args[-1])

  return f


def cases(platform: str):
  """(label, function, specs) for every row of both ops on ``platform``, forward and fwd+VJP."""
  out = []
  bop = functools.partial(bops.bitplane_matmul, impl="pallas", platform=platform)
  for plat, bucket, _ in bblocks.production_configs():
    if plat != platform:
      continue
    m = BUCKET_M[bucket]
    for xn, xd in (("bf16", jnp.bfloat16), ("f32", jnp.float32), ("f16", jnp.float16)):
      for sn, sd in (("f16", jnp.float16), ("bf16", jnp.bfloat16), ("f32", jnp.float32)):
        out.append((f"bitplane {bucket} M={m} x={xn} scales={sn} fwd", bop, _bp_specs(m, xd, sd)))
    specs = _bp_specs(m, jnp.bfloat16, jnp.float16)
    grad = lambda x, pl_, a, b, p, op=bop: jax.grad(
      lambda x, a, b: jnp.sum(jnp.sin(op(x, pl_, a, b, p).astype(jnp.float32))), argnums=(0, 1, 2)
    )(x, a, b)
    out.append((f"bitplane {bucket} M={m} fwd+bwd", grad, specs))
  # Spline: the production rows, then (TPU) the lane-gather rows of blocks.ALTERNATIVE_TABLE; TPU
  # labels name the variant (the production TPU rows are "portable", chosen by the roofline).
  rows = [(plat, bucket, cfg, None) for plat, bucket, cfg in sblocks.production_configs()]
  rows += [(plat, bucket, cfg, cfg) for plat, bucket, cfg in sblocks.alternative_configs()]
  for plat, bucket, cfg, block_sizes in rows:
    if plat != platform:
      continue
    G = BUCKET_G[bucket]
    p = max(cfg.fwd_bp, 2) if platform == "tpu" else 8
    # TPU: a batch as wide as the row's widest block, so the compiled blocks are the row's own.
    b = max(cfg.fwd_bb, cfg.dt_bb, cfg.dx_bb, 512) if platform == "tpu" else 512
    op = functools.partial(
      sops.spline_lookup,
      grid=SigmaGrid(G),
      impl="pallas",
      interpret=False,
      platform=platform,
      block_sizes=block_sizes,
    )
    specs = (SDS((b, p, 2), jnp.float32), SDS((p, G + 1, G + 1, 512), jnp.float32))
    name = (
      f"spline {bucket} ({cfg.variant}) G={G}" if platform == "tpu" else f"spline {bucket} G={G}"
    )
    out.append((f"{name} fwd", op, specs))
    vjp = lambda x, t, g, op=op: jax.vjp(op, x, t)[1](g)
    out.append((f"{name} bwd", vjp, specs + (SDS((b, 512), jnp.float32),)))
  return out


def tpu_report(targets, only: str = "") -> list[str]:
  lines = ["| target | case | result | seconds | temp bytes |", "|---|---|---|---|---|"]
  for target in targets:
    for label, f, specs in cases("tpu"):
      if only not in label:
        continue
      t0 = time.perf_counter()
      try:
        c = _targets.compile_for_tpu(f, specs, target)
        res, temp = "ok", _targets.memory_facts(c).get("temp_size_in_bytes", "")
      except Exception as e:  # noqa: BLE001 - reported, not raised
        res, temp = "FAIL: " + str(e).split("\n")[0][:120], ""
      lines.append(f"| {target} | {label} | {res} | {time.perf_counter() - t0:.1f} | {temp} |")
      print(lines[-1], flush=True)
  return lines


def gpu_report(only: str = "") -> list[str]:
  keys = (
    "registers",
    "spill_stores",
    "spill_loads",
    "shared",
    "mma",
    "wgmma",
    "fma_f32",
    "int_to_float",
    "mma_loop_instr",
    "seconds",
  )
  lines = ["| case | kernel | " + " | ".join(keys) + " |", "|---" * (len(keys) + 2) + "|"]
  for label, f, specs in cases("gpu"):
    if only not in label:
      continue
    if "scales=" in label and "scales=f16" not in label:
      continue  # scale dtype does not change the Triton kernel's structure
    try:
      kernels = _targets.triton_modules(f, specs)
    except Exception as e:  # noqa: BLE001
      lines.append(f"| {label} | lowering FAIL: {str(e).splitlines()[0][:100]} |")
      continue
    seen = set()
    for k in kernels:
      if k["name"] in seen:
        continue
      seen.add(k["name"])
      try:
        facts = _targets.triton_compile(k)
        lines.append(f"| {label} | {k['name']} | " + " | ".join(str(facts[x]) for x in keys) + " |")
      except Exception as e:  # noqa: BLE001
        lines.append(f"| {label} | {k['name']} | FAIL: {str(e).splitlines()[0][:100]} |")
      print(lines[-1], flush=True)
  return lines


def lut_report() -> list[str]:
  """The Hopper LUT decode kernel (Mosaic GPU) through the public op on a compile-only H200:
  ptxas registers / spills and PTX / SASS instructions per (weight, plane) per thread."""
  keys = (
    "registers",
    "spill_stores",
    "ptx_loop",
    "ptx_total",
    "ptx_per_wp_loop",
    "ptx_per_wp_kernel",
    "sass_loop",
    "sass_total",
    "sass_per_wp_loop",
    "sass_per_wp_kernel",
    "seconds",
  )
  lines = ["| case | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
  op = functools.partial(bops.bitplane_matmul, impl="pallas", platform="gpu")
  for g in (64, 128, 256):
    label = f"bitplane lut M=1 K=N={K} g={g} x=bf16 scales=f16"
    specs = (
      SDS((1, K), jnp.bfloat16),
      SDS((4, K // 32, N), jnp.uint32),
      SDS((sum(PRECISIONS), K // g, N), jnp.float16),
      SDS((len(PRECISIONS), K // g, N), jnp.float16),
      SDS((), jnp.int32),
    )
    try:
      facts = _targets.lut_facts(op, specs, weights_per_iteration=256 * 4)
      lines.append(f"| {label} | " + " | ".join(str(facts[x]) for x in keys) + " |")
    except Exception as e:  # noqa: BLE001
      lines.append(f"| {label} | FAIL: {str(e).splitlines()[0][:100]} |")
    print(lines[-1], flush=True)
  return lines


NAMES = ("tpu", "gpu", "only", "out")


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
  """Defines this tool's flags in ``fv`` (called only when the file is the program)."""
  flags.DEFINE_list("tpu", ["v5e", "v6e"], "TPU generations (empty to skip).", flag_values=fv)
  flags.DEFINE_boolean("gpu", True, "Compile the Triton kernels for sm_90a.", flag_values=fv)
  flags.DEFINE_string("only", "", "Only the cases whose label contains this text.", flag_values=fv)
  flags.DEFINE_string("out", "", "Also write the Markdown tables to this file.", flag_values=fv)


def main(argv, fv: flags.FlagValues = flags.FLAGS) -> None:
  """Compiles every case for the targets asked for and prints (and writes) the tables."""
  _cli.no_arguments(argv)
  a = _cli.values(fv, NAMES)
  lines = []
  targets = [t for t in a["tpu"] if t]
  if targets:
    ok, why = _targets.libtpu_available()
    lines += [f"## TPU ({', '.join(targets)})", ""]
    lines += (tpu_report(targets, a["only"]) if ok else [f"TPU skipped: {why}"]) + [""]
  if a["gpu"]:
    ok, why = _targets.triton_available()
    lines += ["## GPU (sm_90a)", ""]
    lines += gpu_report(a["only"]) if ok else [f"GPU skipped: {why}"]
    if not a["only"] or "lut" in a["only"]:
      ok, why = _targets.cuda_available()
      lines += ["", "## GPU (sm_90a), Mosaic GPU LUT decode kernel (compile-only H200)", ""]
      lines += lut_report() if ok else [f"skipped: {why}"]
  if a["out"]:
    with open(a["out"], "w") as fh:
      fh.write("\n".join(_header() + lines) + "\n")


def _header() -> list[str]:
  """Title and provenance of a written report: date, versions, shapes and what the columns mean."""
  import datetime
  import importlib.metadata as md

  def version(name):
    try:
      return md.version(name)
    except md.PackageNotFoundError:
      return "not installed"

  return [
    "# Compiled-code report (no chip): every production block row, both kernels",
    "",
    f"Generated on a CPU host by `python -m experiments.bench.compile_report` on "
    f"{datetime.date.today().isoformat()} (jax {version('jax')}, libtpu {version('libtpu')}, "
    f"triton {version('triton')}). Shapes: bit-plane K = N = 1024, g = 128, 4 planes; spline "
    "Q = 512, P = 8 (TPU: the row's pair block, at least 2), B = 512 (TPU: the row's widest batch "
    "block). TPU: libtpu ahead-of-time compile from `jax.experimental.topologies` (seconds are "
    "wall time on a shared host; temp bytes from the executable's memory analysis). GPU: sm_90a, "
    "the Triton IR Pallas emits compiled by the triton wheel; registers and spill bytes from "
    "ptxas -v; mma = mma.sync, wgmma = Hopper warpgroup MMA, fma_f32 = scalar FP32 FMAs in the "
    "PTX, int_to_float = integer -> float cvt instructions, mma_loop_instr = PTX instructions per "
    "thread in the innermost loop that issues MMAs (-1: none; for the bit-plane decode kernel, "
    "divided by 256·BN/(32·num_warps) weights per thread it is instructions per (weight, plane)). "
    "A bit-plane 'fwd+bwd' case lists only the forward Triton kernel: its backward is the pure-jnp "
    "custom_vjp rule (XLA).",
    "",
  ]


if __name__ == "__main__":
  define_flags()
  _cli.run(main)
