"""Compiled-code facts for every production block row of both kernels (and the alternative rows), on a
host without a chip.

    python -m benchmarks.compile_report            # writes results/compile_report.md
    python -m benchmarks.compile_report [--tpu=v5e,v6e] [--nogpu] [--only spline] [--out report.md]

* TPU: ``jax.jit(f).lower().compile()`` through libtpu for each generation (forward; forward + VJP),
  reporting pass / fail (with Mosaic's message) and the executable's memory analysis.
* GPU, Mosaic GPU (the default GPU kernels): every Mosaic GPU row compiled for a compile-only H200
  by the CUDA plugin (``_targets.mgpu_compile``): the bit-plane wgmma rows of ``WGMMA_TABLE`` and
  the spline rows of ``BLOCK_TABLE["gpu"]`` (forward, dT, dx); ptxas registers / spills, and the
  hot loop of each kernel in PTX and in SASS by unit (the SASS from the triton wheel's ptxas and
  cuobjdump; the counts ``_roofline`` takes for its H200 estimates).
* GPU (Hopper LUT): the Mosaic GPU decode kernel; ptxas registers / spills and PTX / SASS
  instructions per (weight, plane) per thread (``_targets.lut_facts``: hot loop, and whole kernel
  at M = 1, p = 2).
* GPU, Triton (explicit only: Pallas's Triton backend is deprecated): the rows whose variant is a
  Triton kernel, named through their config (bit-plane ``BLOCK_TABLE["gpu"]``, spline
  ``ALTERNATIVE_TABLE["gpu"]``), compiled to sm_90a with the triton wheel; registers, spill bytes,
  shared memory, tensor-core instructions (mma.sync / wgmma), scalar FP32 FMAs, int -> float
  converts and the instructions per thread in the innermost MMA loop (``mma_loop_instr``; for the
  bit-plane kernels the plane loop: / (256 · BN / (32 · num_warps)) = instructions per (weight,
  plane)).

Needs the ``[compile]`` extra (libtpu, triton) and, for Mosaic GPU, the compile venv's CUDA plugin.
Shapes as in tests/kernels_pallas/test_compile_targets.py. A full run (both TPU generations, every
GPU kernel) takes a few minutes on a 2-core host.
"""

from __future__ import annotations

import functools
import os
import sys
import time

if __package__ in (None, ""):
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import flags
import jax  # pylint: disable=g-import-not-at-top
import jax.numpy as jnp

from experiments import _cli
from benchmarks import _targets
from kernels_pallas.bitplane_matmul import blocks as bblocks
from kernels_pallas.bitplane_matmul import ops as bops
from kernels_pallas.spline_lookup import blocks as sblocks
from kernels_pallas.spline_lookup import ops as sops
from kernels_pallas.spline_lookup.grid import SigmaGrid

SDS = jax.ShapeDtypeStruct
BUCKET_M = {"decode": 1, "small": 64, "prefill": 512}
# The wgmma rows at their largest M ("decode" at 16: up to 5 rows go to the LUT kernel).
WGMMA_M = {"decode": 16, "small": 64, "prefill": 512}
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


X_DTYPES = (("bf16", jnp.bfloat16), ("f32", jnp.float32), ("f16", jnp.float16))
S_DTYPES = (("f16", jnp.float16), ("bf16", jnp.bfloat16), ("f32", jnp.float32))


def _bp_grad(op):
  return lambda x, pl_, a, b, p: jax.grad(
    lambda x, a, b: jnp.sum(jnp.sin(op(x, pl_, a, b, p).astype(jnp.float32))), argnums=(0, 1, 2)
  )(x, a, b)


def _spline_cases(platform, rows, label):
  """(label, function, specs) of the spline rows ``(bucket, cfg, block_sizes)``: forward, and the
  VJP (dT and dx kernels)."""
  out = []
  for bucket, cfg, block_sizes in rows:
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
    name = f"spline {bucket} ({label(cfg)}) G={G}"
    out.append((f"{name} fwd", op, specs))
    vjp = lambda x, t, g, op=op: jax.vjp(op, x, t)[1](g)
    out.append((f"{name} bwd", vjp, specs + (SDS((b, 512), jnp.float32),)))
  return out


def cases(platform: str):
  """(label, function, specs) for the rows compiled by libtpu (``"tpu"``: every TPU row of both
  ops, the spline lane-gather rows of ``ALTERNATIVE_TABLE`` too) or by the triton wheel (``"gpu"``:
  the Triton rows, named through their config since no Triton kernel is a default), forward and
  fwd+VJP. The Mosaic GPU rows are ``mgpu_cases``."""
  if platform not in ("tpu", "gpu"):
    raise ValueError(f"platform must be tpu or gpu; got {platform!r}")
  out = []
  for plat, bucket, _ in bblocks.production_configs():
    if plat != platform:
      continue
    m = BUCKET_M[bucket]
    name = f"bitplane {bucket}"
    for xn, xd in X_DTYPES:
      kw = {}
      if platform == "gpu":  # the Triton row as the table clamps it for this x (f32: partials)
        itemsize = jnp.dtype(xd).itemsize
        kw["config"] = bblocks.pick_config(
          "gpu", m, K, N, 128, itemsize, f32_activations=xn == "f32"
        )
        name = f"bitplane {bucket} (triton {kw['config'].variant})"
      bop = functools.partial(bops.bitplane_matmul, impl="pallas", platform=platform, **kw)
      for sn, sd in S_DTYPES:
        out.append((f"{name} M={m} x={xn} scales={sn} fwd", bop, _bp_specs(m, xd, sd)))
    kw = {}
    if platform == "gpu":
      kw["config"] = bblocks.pick_config("gpu", m, K, N, 128, 2)
      name = f"bitplane {bucket} (triton {kw['config'].variant})"
    bop = functools.partial(bops.bitplane_matmul, impl="pallas", platform=platform, **kw)
    out.append((f"{name} M={m} fwd+bwd", _bp_grad(bop), _bp_specs(m, jnp.bfloat16, jnp.float16)))
  # Spline. TPU: the production rows ("portable", chosen by the roofline), then the lane-gather
  # rows of ALTERNATIVE_TABLE; GPU: the Triton gather rows of ALTERNATIVE_TABLE, named.
  rows = []
  if platform == "tpu":
    rows = [(b, cfg, None) for plat, b, cfg in sblocks.production_configs() if plat == "tpu"]
  rows += [(b, cfg, cfg) for plat, b, cfg in sblocks.alternative_configs() if plat == platform]
  label = (lambda cfg: cfg.variant) if platform == "tpu" else (lambda cfg: f"triton {cfg.variant}")
  return out + _spline_cases(platform, rows, label)


def mgpu_cases():
  """(label, function, specs) of the Mosaic GPU rows, through the public op's own dispatch on the
  compile-only H200: the bit-plane wgmma rows (``WGMMA_TABLE``, each at its largest M, every x
  dtype; f16 scales) and the spline rows of ``BLOCK_TABLE["gpu"]`` (variant "mgpu"). The LUT row
  has its own report (``lut_report``)."""
  out = []
  bop = functools.partial(bops.bitplane_matmul, impl="pallas", platform="gpu")
  for _, bucket, cfg in bblocks.mosaic_gpu_configs():
    m = WGMMA_M[bucket]
    for xn, xd in X_DTYPES:
      label = f"bitplane {bucket} ({cfg.variant}) M={m} x={xn} scales=f16 fwd"
      out.append((label, bop, _bp_specs(m, xd, jnp.float16)))
  rows = [(b, cfg, None) for plat, b, cfg in sblocks.production_configs() if plat == "gpu"]
  return out + _spline_cases("gpu", rows, lambda cfg: cfg.variant)


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
    if not kernels:
      lines.append(f"| {label} | FAIL: no Triton kernel in the lowered graph |")
      print(lines[-1], flush=True)
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


# SASS opcodes by unit (per-thread lanes; uniform-datapath U* instructions are per warp and only
# issued), as `_roofline.UNIT_RATES` counts them.
SASS_UNITS = {
  "int": {"IADD3", "IMAD", "LOP3", "PRMT", "SHF", "LEA", "VIADD", "ISETP", "SEL", "IABS", "IMNMX"},
  "fp32": {"FFMA", "FADD", "FMUL", "FMNMX", "FSEL", "FSETP", "HADD2", "HFMA2", "HMUL2"},
  "ldg": {"LDG", "LD"},
  "lds": {"LDS"},
  "sts": {"STS"},
  "mma": {"HGMMA", "HMMA"},
}
# The hot loop of each Mosaic GPU kernel: the innermost loop whose SASS holds all these opcodes
# (and whose PTX holds the marker): the wgmma kernel's group loop (the unpack: LOP3, the wgmma),
# the spline forward's pair loop and dx's output loop (row loads and FMAs), dT's batch loop.
HOT_LOOP = {
  "bitplane_matmul_wgmma": (("HGMMA", "LOP3"), "xor"),
  "spline_lookup_fwd_mgpu": (("LDG", "FFMA"), "ld.global"),
  "spline_lookup_dx_mgpu": (("LDG", "FFMA"), "ld.global"),
  "spline_lookup_dtable_mgpu": (("FFMA",), "fma.rn.f32"),
}


def _opcode(inst: str) -> str:
  import re

  return re.sub(r"^@!?U?P\w+\s+", "", inst).split()[0].split(".")[0]


def sass_loop_units(insts: list[tuple[int, str]], markers) -> dict:
  """SASS of the smallest innermost loop (a backward branch with no branch into the loop's own
  range before it) holding every opcode of ``markers``, by unit (``SASS_UNITS``) and in all
  (``issue``); ``{}`` when there is none."""
  import re

  index = {a: i for i, (a, _) in enumerate(insts)}
  best = None
  for i, (_, text) in enumerate(insts):
    m = re.search(r"\bBRA\s+(?:`\()?(?:0x)?([0-9a-f]+)", text)
    if not m or int(m.group(1), 16) not in index or index[int(m.group(1), 16)] >= i:
      continue
    start = index[int(m.group(1), 16)]
    body = [t for _, t in insts[start : i + 1]]
    inner = not any(
      (mm := re.search(r"\bBRA\s+(?:`\()?(?:0x)?([0-9a-f]+)", t))
      and index.get(int(mm.group(1), 16), -1) > start
      for t in body[:-1]
    )
    ops = [_opcode(t) for t in body]
    if inner and all(x in ops for x in markers) and (best is None or len(ops) < len(best)):
      best = ops
  if best is None:
    return {}
  units = {u: sum(op in names for op in best) for u, names in SASS_UNITS.items()}
  return dict(units, issue=len(best))


def mgpu_report(only: str = "") -> list[str]:
  """Every Mosaic GPU row (``mgpu_cases``) compiled for the compile-only H200: per kernel ptxas
  registers and spills, and its hot loop (``HOT_LOOP``) in PTX and in SASS by unit, per thread
  and iteration."""
  keys = ("registers", "spill_stores", "spill_loads", "ptx_loop", "sass_loop")
  units = tuple(SASS_UNITS)
  lines = [
    "| case | kernel | " + " | ".join(keys + units) + " | seconds |",
    "|---" * (len(keys) + len(units) + 3) + "|",
  ]
  for label, f, specs in mgpu_cases():
    if only not in label:
      continue
    try:
      kernels = _targets.mgpu_compile(f, specs)
    except Exception as e:  # noqa: BLE001
      lines.append(f"| {label} | compile FAIL: {str(e).splitlines()[0][:100]} |")
      print(lines[-1], flush=True)
      continue
    if not kernels:  # Mosaic GPU dumps a kernel only the first time it compiles it here
      lines.append(f"| {label} | (no new kernel: compiled in a row above) |")
    for k in kernels:
      base = k["name"].rsplit("_", 1)[0] if k["name"][-1].isdigit() else k["name"]
      base = next((h for h in HOT_LOOP if base.startswith(h)), base)
      markers, ptx_marker = HOT_LOOP.get(base, ((), ""))
      ptx_loop = _targets.ptx_loop_instructions(k["ptx"], ptx_marker)[0] if ptx_marker else -1
      try:
        sass = sass_loop_units(_targets.sass_of(k["ptx"])[0], markers) if markers else {}
      except Exception as e:  # noqa: BLE001
        sass = {"issue": f"SASS FAIL: {str(e).splitlines()[0][:60]}"}
      facts = dict(k, ptx_loop=ptx_loop, sass_loop=sass.get("issue", -1))
      cells = [str(facts[x]) for x in keys] + [str(sass.get(u, -1)) for u in units]
      lines.append(f"| {label} | {k['name']} | " + " | ".join(cells) + f" | {k['seconds']} |")
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
# The committed report: where the full report (both TPU generations, every GPU kernel) is written
# by default.
FULL_TPU = ("v5e", "v6e")
DEFAULT_OUT = os.path.join(
  os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results", "compile_report.md"
)


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
  """Defines this tool's flags in ``fv`` (called only when the file is the program)."""
  flags.DEFINE_list("tpu", list(FULL_TPU), "TPU generations (empty to skip).", flag_values=fv)
  flags.DEFINE_boolean(
    "gpu", True, "Compile the GPU kernels (Mosaic GPU and Triton) for sm_90a.", flag_values=fv
  )
  flags.DEFINE_string("only", "", "Only the cases whose label contains this text.", flag_values=fv)
  flags.DEFINE_string(
    "out",
    None,
    "Also write the Markdown tables to this file. Default: results/compile_report.md for the full "
    "report (--tpu=v5e,v6e, --gpu, no --only), nothing for a subset; --out= writes nothing.",
    flag_values=fv,
  )


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
    cuda, why_cuda = _targets.cuda_available()
    triton, why_triton = _targets.triton_available()
    ok, why = cuda and triton, why_cuda or why_triton  # SASS needs the triton wheel's ptxas
    lines += ["## GPU (sm_90a), Mosaic GPU kernels, the defaults (compile-only H200)", ""]
    lines += (mgpu_report(a["only"]) if ok else [f"skipped: {why}"]) + [""]
    if not a["only"] or "lut" in a["only"]:
      lines += ["## GPU (sm_90a), Mosaic GPU LUT decode kernel (compile-only H200)", ""]
      lines += (lut_report() if ok else [f"skipped: {why}"]) + [""]
    lines += ["## GPU (sm_90a), Triton kernels (explicit only)", ""]
    lines += gpu_report(a["only"]) if triton else [f"GPU skipped: {why_triton}"]
  out = a["out"]
  if out is None:
    full = set(targets) == set(FULL_TPU) and a["gpu"] and not a["only"]
    out = DEFAULT_OUT if full else ""
  if out:
    with open(out, "w") as fh:
      fh.write("\n".join(_header() + lines) + "\n")
    print(f"wrote {out}")


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
    "# Compiled-code report (no chip): every block row, both kernels",
    "",
    f"Generated on a CPU host by `python -m benchmarks.compile_report` on "
    f"{datetime.date.today().isoformat()} (jax {version('jax')}, libtpu {version('libtpu')}, "
    f"triton {version('triton')}, jax-cuda13-plugin {version('jax-cuda13-plugin')}). Shapes: "
    "bit-plane K = N = 1024, g = 128, 4 planes; spline Q = 512, P = 8 (TPU: the row's pair block, "
    "at least 2), B = 512 (TPU: the row's widest batch block). TPU: libtpu ahead-of-time compile "
    "from `jax.experimental.topologies` (seconds are wall time on a shared host; temp bytes from "
    "the executable's memory analysis). GPU, Mosaic GPU (the default GPU kernels: bit-plane wgmma "
    "rows at M = 16 / 64 / 512 and the LUT GEMV; spline mgpu rows): compiled for a compile-only "
    "H200 by the CUDA plugin through the public op's own dispatch; registers and spill bytes from "
    "the plugin's ptxas report; ptx_loop / sass_loop = instructions per thread in the kernel's hot "
    "loop (wgmma: the group loop that unpacks g / 2 weights per thread; spline forward: the pair "
    "loop over the block's 16 samples; dx: its output loop; dT: its batch loop), the SASS by unit "
    "(int, fp32, ldg, lds, sts, mma: HGMMA) from the triton wheel's ptxas and cuobjdump; a kernel "
    "Mosaic GPU already compiled in the process is not listed again. GPU, Triton (explicit only; "
    "Pallas's Triton backend is deprecated): the Triton rows named through their config, the "
    "Triton IR Pallas emits compiled by the triton wheel for sm_90a; registers and spill bytes "
    "from ptxas -v; mma = mma.sync, wgmma = Hopper warpgroup MMA, fma_f32 = scalar FP32 FMAs in "
    "the PTX, int_to_float = integer -> float cvt instructions, mma_loop_instr = PTX instructions "
    "per thread in the innermost loop that issues MMAs (-1: none; for the bit-plane decode kernel, "
    "divided by 256·BN/(32·num_warps) weights per thread it is instructions per (weight, plane)). "
    "A bit-plane 'fwd+bwd' case lists only the forward kernel: its backward is the pure-jnp "
    "custom_vjp rule (XLA).",
    "",
  ]


if __name__ == "__main__":
  define_flags()
  _cli.run(main)
