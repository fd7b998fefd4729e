"""Compile kernels for real TPU targets on a host without a chip (libtpu ahead-of-time).

Cross-lowering (``.lower(lowering_platforms=("tpu",))``) stops before the backend compilers. With the
``libtpu`` wheel that matches the installed jax (``pip install -e ".[compile]"``), a device from
``jax.experimental.topologies.get_topology_desc("v5e:2x2", "tpu")`` lets
``jax.jit(f).trace(*specs).lower().compile()`` run the whole Mosaic / libtpu pipeline (layout passes,
VMEM allocation, TPU code generation) on a CPU host: about half of kernel failures only show there.

Used by ``tests/kernels_pallas/test_compile_targets.py`` and the benchmarks' compiled-code facts.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from typing import Callable, Sequence

import jax

# Topology names accepted by get_topology_desc and the accelerator type libtpu is told it runs on.
TPU_TARGETS = {"v5e": ("v5e:2x2", "v5litepod-4"), "v6e": ("v6e:2x2", "v6e-4")}


def libtpu_available() -> tuple[bool, str]:
  """``(ok, reason)``: whether the libtpu wheel is importable (the ``[compile]`` extra)."""
  if importlib.util.find_spec("libtpu") is None:
    return False, 'libtpu is not installed (pip install -e ".[compile]")'
  return True, ""


@functools.lru_cache(maxsize=None)
def tpu_device(target: str):
  """A TPU device of generation ``target`` ("v5e" or "v6e") from an ahead-of-time topology.

  Nothing is attached: the device only carries the chip description for compilation.
  """
  topo_name, accel = TPU_TARGETS[target]
  # libtpu would otherwise query the GCE metadata server for the host's slice.
  os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")
  os.environ.setdefault("TPU_ACCELERATOR_TYPE", accel)
  os.environ.setdefault("TPU_WORKER_HOSTNAMES", "localhost")
  from jax.experimental import topologies

  return topologies.get_topology_desc(topo_name, "tpu").devices[0]


def specs_on(device, specs: Sequence) -> tuple:
  """``ShapeDtypeStruct``s (or None) placed on ``device`` (a ``SingleDeviceSharding``)."""
  sh = jax.sharding.make_single_device_sharding(device)
  return tuple(
    None if s is None else jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sh) for s in specs
  )


def compile_for_tpu(f: Callable, specs: Sequence, target: str):
  """``jax.jit(f)`` compiled by libtpu for ``target``; returns the ``Compiled`` object.

  Raises whatever Mosaic / XLA:TPU raise (e.g. "Mosaic failed to compile TPU kernel: ...").
  """
  dev = tpu_device(target)
  return jax.jit(f).trace(*specs_on(dev, specs)).lower().compile()


def memory_facts(compiled) -> dict:
  """Bytes from the compiled executable's memory analysis (argument, output, temporaries)."""
  try:
    ma = compiled.memory_analysis()
  except Exception:  # noqa: BLE001 - not every backend implements it
    return {}
  if ma is None:
    return {}
  return {
    k: int(getattr(ma, k))
    for k in ("argument_size_in_bytes", "output_size_in_bytes", "temp_size_in_bytes")
    if hasattr(ma, k)
  }


# ----------------------------------------------------------------------------------------------
# GPU: Pallas-emitted Triton IR compiled to sm_90a PTX and cubin by the `triton` wheel (its bundled
# ptxas). Private JAX API (the Triton lowering module) is used to capture each kernel's IR and its
# num_warps / num_stages: benchmark / test tooling only, never imported by kernels_pallas.


def triton_available() -> tuple[bool, str]:
  """``(ok, reason)``: whether the triton wheel (with its bundled ptxas) is importable."""
  if importlib.util.find_spec("triton") is None:
    return False, 'triton is not installed (pip install -e ".[compile]")'
  return True, ""


def triton_modules(f: Callable, specs: Sequence) -> list[dict]:
  """Lowers ``jax.jit(f)`` for CUDA and returns every Triton kernel it contains.

  Returns:
    a list of ``{"name", "ttir" (MLIR text), "num_warps", "num_stages"}``, in lowering order.
  """
  import sys
  from jax._src.pallas.triton import lowering as tl

  def keep(res):
    caller = sys._getframe(2).f_locals  # the Pallas call site's frame (block settings)
    op = res.module.operation
    return dict(
      name=str(op.attributes["sym_name"]).strip('"'),
      ttir=op.get_asm(enable_debug_info=False),
      num_warps=int(caller.get("num_warps", 4)),
      num_stages=int(caller.get("num_stages", 3)),
    )

  with abstract_gpu():
    return _record_lowering(tl, "lower_jaxpr_to_triton_module", keep, f, specs, "cuda")


def abstract_gpu(device_kind: str = "NVIDIA H200"):
  """A context naming an abstract GPU for lowering on a CPU host: Pallas's Triton lowering reads
  the target from the default device since jax 0.12 ("No supported GPU devices found, please
  specify an abstract GPU device using AbstractDevice"). A no-op when a GPU is the default device
  (a compile-only one included)."""
  import contextlib

  default = jax.config.jax_default_device
  if getattr(default, "platform", None) == "gpu" or jax.default_backend() == "gpu":
    return contextlib.nullcontext()
  dev = jax.sharding.AbstractDevice(device_kind=device_kind, num_cores=132, platform="gpu")
  return jax.sharding.use_abstract_mesh(
    jax.sharding.AbstractMesh((1,), ("i",), abstract_device=dev)
  )


def triton_compile(kernel: dict, capability: int = 90) -> dict:
  """Compiles one captured kernel with the triton wheel for ``sm_{capability}`` (90 -> sm_90a).

  Returns:
    ``{"name", "registers", "spill_stores", "spill_loads", "stack", "shared", "mma", "wgmma",
    "fma_f32", "int_to_float", "mma_loop_instr", "seconds"}`` from ptxas's ``-v`` report and the
    PTX text (``mma``: warp-level ``mma.sync`` instructions, ``wgmma``: Hopper warpgroup MMAs;
    ``fma_f32``: scalar FP32 FMAs; ``mma_loop_instr``: see ``ptx_mma_loop_instructions``).
  Raises:
    whatever Triton / ptxas raise on a kernel they cannot compile.
  """
  import contextlib
  import io
  import re
  import tempfile
  import time
  import triton
  from triton.backends.compiler import GPUTarget
  from triton.compiler import compile as tcompile

  with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, kernel["name"] + ".ttir")
    with open(path, "w") as fh:
      fh.write(kernel["ttir"])
    knobs = triton.knobs
    old = (knobs.cache.dir, knobs.nvidia.dump_ptxas_log)
    knobs.cache.dir, knobs.nvidia.dump_ptxas_log = os.path.join(tmp, "cache"), True
    log = io.StringIO()
    t0 = time.perf_counter()
    try:
      with contextlib.redirect_stdout(log):
        k = tcompile(
          path,
          target=GPUTarget("cuda", capability, 32),
          options=dict(num_warps=kernel["num_warps"], num_stages=kernel["num_stages"]),
        )
    finally:
      knobs.cache.dir, knobs.nvidia.dump_ptxas_log = old
    seconds = time.perf_counter() - t0
  text, ptx = log.getvalue(), k.asm["ptx"]
  num = lambda pat: int(m.group(1)) if (m := re.search(pat, text)) else -1
  return dict(
    name=kernel["name"],
    registers=num(r"Used (\d+) registers"),
    spill_stores=num(r"(\d+) bytes spill stores"),
    spill_loads=num(r"(\d+) bytes spill loads"),
    stack=num(r"(\d+) bytes stack frame"),
    shared=int(k.metadata.shared),
    mma=len(re.findall(r"\bmma\.sync", ptx)),
    wgmma=len(re.findall(r"\bwgmma\.mma_async", ptx)),
    fma_f32=len(re.findall(r"\bfma\.rn\.f32", ptx)),
    int_to_float=ptx_int_to_float_converts(ptx),
    mma_loop_instr=ptx_mma_loop_instructions(ptx),
    seconds=round(seconds, 1),
  )


def mosaic_modules(f: Callable, specs: Sequence) -> list[str]:
  """Lowers ``jax.jit(f)`` for TPU and returns the Mosaic MLIR (before libtpu's layout passes) of
  every Pallas kernel in it. Private JAX API: tooling only. A fake chip must be registered for the
  "cpu" device kind when a lowering path queries the chip (the tests' ``fake_tpu_chip`` fixture)."""
  from jax._src.pallas.mosaic import lowering as ml

  return _record_lowering(
    ml,
    "lower_jaxpr_to_pipelined_module",
    lambda module: module.operation.get_asm(enable_debug_info=False),
    f,
    specs,
    "tpu",
  )


def _record_lowering(
  module, name: str, keep: Callable, f: Callable, specs: Sequence, platform: str
) -> list:
  """Lowers ``jax.jit(f)`` for ``platform`` with ``module.name`` wrapped to collect
  ``keep(result)`` of every call (the Pallas kernels' lowered modules); restores it after."""
  found = []
  orig = getattr(module, name)

  def record(*args, **kwargs):
    res = orig(*args, **kwargs)
    found.append(keep(res))
    return res

  setattr(module, name, record)
  try:
    jax.jit(f).trace(*specs).lower(lowering_platforms=(platform,))
  finally:
    setattr(module, name, orig)
  return found


def int_to_float_converts(mosaic_text: str, min_rows: int = 64) -> list[str]:
  """The ``arith.sitofp`` / ``arith.uitofp`` ops of a Mosaic module on vectors with at least
  ``min_rows`` rows (second-minor dim): per-weight conversions of an unpacked group (g >= 64
  inputs). Per-scale-row conversions (1 row) are not counted."""
  import re

  out = []
  for m in re.finditer(r"arith\.(?:si|ui)tofp [^\n]*?: vector<([0-9x]+)x\w+> to", mosaic_text):
    dims = [int(d) for d in m.group(1).split("x")]
    if len(dims) >= 2 and dims[-2] >= min_rows:
      out.append(m.group(0))
  return out


def ptx_mma_loop_instructions(ptx: str) -> int:
  """Instructions (per thread, per iteration) in the innermost PTX loop that issues tensor-core
  MMAs (``mma.sync`` / ``wgmma``): directives (``.loc`` ...), labels and comments are not counted.
  -1 when there is no such loop. For the bit-plane kernels this is the plane loop: divided by the
  weights one thread handles per iteration (256 · BN / (32 · num_warps)) it gives instructions per
  (weight, plane)."""
  import re

  lines = ptx.splitlines()
  best = -1
  for i, line in enumerate(lines):
    m = re.match(r"^(\$L__BB\d+_\d+):.*Inner Loop Header", line)
    if not m:
      continue
    back = re.compile(r"\bbra(?:\.uni)?\s+" + re.escape(m.group(1)) + ";")
    end = next((j for j in range(i + 1, len(lines)) if back.search(lines[j])), None)
    if end is None:
      continue
    body = [
      l.strip()
      for l in lines[i + 1 : end + 1]
      if l.startswith("\t") and l.strip() and not l.strip().startswith(("//", "."))
    ]
    if any(re.search(r"\b(?:mma\.sync|wgmma\.mma_async)", l) for l in body):
      best = len(body) if best < 0 else min(best, len(body))
  return best


def ptx_int_to_float_converts(ptx: str) -> int:
  """Number of integer -> float ``cvt`` instructions in PTX text."""
  import re

  return len(re.findall(r"\bcvt\.rn\.(?:f32|f16|bf16|f16x2|bf16x2)\.[su](?:8|16|32|64)\b", ptx))


# ----------------------------------------------------------------------------------------------
# Whole programs for multi-device targets without a chip: TPU pod slices and compile-only GPUs
# (``jax.experimental.topologies``), and the facts read off their compiled HLO text.

# The project's own stream_executor.GpuTargetConfigProto for an H200 SXM (the field names follow
# XLA's xla/backends/gpu/target_config/specs/h200.txtpb; fields the installed jaxlib may not know are
# left out). Figures: NVIDIA H200 product page / datasheet (nvidia.com/en-us/data-center/h200):
# 141 GB HBM3e, 4.8 TB/s, Hopper GH100 with 132 SMs (SXM), compute capability 9.0; 1.98 GHz
# boost clock, 50 MB L2, 228 KiB shared memory per SM (227 KiB per block opt-in) from NVIDIA's
# Hopper tuning guide (docs.nvidia.com/cuda/hopper-tuning-guide).
H200_TARGET_CONFIG = """
gpu_device_info {
  threads_per_block_limit: 1024
  threads_per_warp: 32
  shared_memory_per_block: 49152
  shared_memory_per_core: 233472
  threads_per_core_limit: 2048
  core_count: 132
  fpus_per_core: 128
  block_dim_limit_x: 2147483647
  block_dim_limit_y: 65535
  block_dim_limit_z: 65535
  memory_bandwidth: 4800000000000
  l2_cache_size: 52428800
  clock_rate_ghz: 1.98
  device_memory_size: 141000000000
  shared_memory_per_block_optin: 232448
  cuda_compute_capability { major: 9 minor: 0 }
  registers_per_core_limit: 65536
  registers_per_block_limit: 65536
}
platform_name: "CUDA"
dnn_version_info { major: 9 minor: 8 }
device_description_str: "NVIDIA H200"
"""

# Pod-slice topologies: name -> (get_topology_desc name, TPU_ACCELERATOR_TYPE libtpu is told).
TPU_SLICES = {
  "v5e-16": ("v5e:4x4", "v5litepod-16"),
  "v5p-8": ("v5p:2x2x2", "v5p-8"),
  "v6e-8": ("v6e:2x4", "v6e-8"),
}


def cuda_available() -> tuple[bool, str]:
  """``(ok, reason)``: whether a compile-only CUDA plugin (jax-cuda13-plugin + pjrt, or the CUDA 12
  pair of older jax) is there."""
  if not any(importlib.util.find_spec(f"jax_cuda{v}_plugin") for v in (13, 12)):
    return False, "jax-cuda13-plugin is not installed (the Makefile's compile venv installs it)"
  return True, ""


@functools.lru_cache(maxsize=None)
def gpu_devices(topology: str = "1x1x8") -> tuple:
  """Compile-only "NVIDIA H200" devices: ``topology`` = "<hosts>x1x<GPUs per host>" ("2x1x8": 16
  devices over 2 processes). Nothing is attached; the devices only carry the target description."""
  from jax.experimental import topologies

  topo = topologies.get_topology_desc(
    "", "cuda", target_config=H200_TARGET_CONFIG, topology=topology
  )
  return tuple(topo.devices)


def set_tpu_env(slice_name: str) -> None:
  """The environment libtpu reads for an ahead-of-time slice (before the first TPU query)."""
  _, accel = TPU_SLICES[slice_name]
  # Measured: the topology name decides the slice; a process that set another accelerator type
  # first (tpu_device) still gets the right devices, so a value already set is kept.
  os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")
  os.environ.setdefault("TPU_ACCELERATOR_TYPE", accel)
  os.environ.setdefault("TPU_WORKER_HOSTNAMES", "localhost")


@functools.lru_cache(maxsize=None)
def tpu_slice_devices(slice_name: str) -> tuple:
  """The devices of a TPU pod slice (a key of ``TPU_SLICES``: "v5e-16" = 16 chips over 4 hosts)."""
  set_tpu_env(slice_name)
  from jax.experimental import topologies

  return tuple(topologies.get_topology_desc(TPU_SLICES[slice_name][0], "tpu").devices)


_DTYPE_BYTES = {
  "pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4,
  "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16, "s4": 1, "u4": 1,
  "f8e4m3fn": 1, "f8e5m2": 1,
}  # fmt: skip
_COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")
# Instructions that launch no kernel of their own (control flow, views, tuples).
_NO_KERNEL = {
  "parameter", "constant", "get-tuple-element", "tuple", "bitcast", "while", "call", "conditional",
  "after-all", "partition-id", "replica-id", "opt-barrier", "add-dependency", "copy-done",
  "all-reduce-done", "all-gather-done", "collective-permute-done", "async-done", "send-done",
  "recv-done", "copy-start",
}  # fmt: skip


def _shape_bytes_dims(text: str) -> tuple[int, list[list[int]]]:
  """Bytes of an HLO type string (array or tuple) and the dims of each array in it."""
  import re

  total, dims = 0, []
  for dt, d in re.findall(r"\b([a-z]+[0-9a-z]*)\[([0-9,]*)\]", text):
    if dt not in _DTYPE_BYTES:
      continue
    shape = [int(x) for x in d.split(",") if x]
    n = 1
    for x in shape:
      n *= x
    total += n * _DTYPE_BYTES[dt]
    dims.append(shape)
  return total, dims


def _matmul_flops(op: str, typ: str, rest: str, shapes: dict) -> float:
  """2 x output elements x contracted elements of a ``dot``, a cuBLAS / cuDNN gemm custom call
  (its ``dot_dimension_numbers``) or a ``convolution`` (kernel elements per output feature,
  taking the kernel's last dim as its output features)."""
  import re

  _, out_dims = _shape_bytes_dims(typ)
  operands = re.findall(r"%([\w.\-]+)", rest.split(")")[0])
  if not out_dims or not operands or operands[0] not in shapes:
    return 0.0
  n_out = 1
  for x in out_dims[0]:
    n_out *= x
  contract = 1
  if op == "convolution":
    if len(operands) > 1 and operands[1] in shapes:
      _, k_dims = _shape_bytes_dims(shapes[operands[1]])
      if k_dims and k_dims[0]:
        for x in k_dims[0][:-1]:
          contract *= x
  else:
    m = re.search(r"lhs_contracting_dims=\{([0-9,]*)\}", rest) or re.search(
      r'"lhs_contracting_dimensions":\[([0-9",]*)\]', rest
    )
    _, lhs_dims = _shape_bytes_dims(shapes[operands[0]])
    if m and lhs_dims:
      for i in m.group(1).replace('"', "").split(","):
        if i:
          contract *= lhs_dims[0][int(i)]
  return 2.0 * n_out * contract


def hlo_facts(hlo_text: str) -> dict:
  """Per-device facts of a compiled (SPMD-partitioned, optimised) HLO module, from its text.

  Every count is weighted by how often its computation runs per call: a ``while`` body by its
  ``known_trip_count`` (else the ``counter < N`` bound of its condition, else 1), fusions and calls as their
  caller, each ``conditional`` branch once (so a step with a rarely taken branch, e.g. PDNS's
  stage refresh, is counted as if it took every branch: an upper bound).

  Returns:
    ``{"collectives": {kind: {"count", "bytes"}}, "matmul_flops", "kernel_bytes", "kernels"}``
    (and, when the module has conditionals, the same under ``"without_conditionals"``: the work
    outside every ``conditional``, a lower bound of a step that takes the cheap branch):
    collectives by kind (``-start`` / async forms folded in; bytes = result size), 2·M·N·K of every
    ``dot`` and ``convolution`` (elementwise work not counted), operand + result bytes of every
    instruction that runs as its own kernel outside fused computations (the HBM traffic of a fused
    program, an estimate; an operand read only through gathers / dynamic slices is charged the
    slices' bytes), and the number of such kernels.
  """
  import re

  comps: dict[str, list[str]] = {}
  fused: set[str] = set()
  entry, cur = None, None
  for line in hlo_text.splitlines():
    m = re.match(r"^(ENTRY\s+)?%?([\w.\-]+)\s*\(.*\)\s*->\s*.*\{\s*$", line)
    if m and not line.startswith(" "):
      cur = m.group(2)
      comps[cur] = []
      if m.group(1):
        entry = cur
      continue
    if cur is not None and line.startswith(" "):
      comps[cur].append(line.strip())
  shapes: dict[str, str] = {}
  inst_re = re.compile(r"^(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.+?)\s+([\w\-]+)\((.*)$")
  parsed: dict[str, list[tuple]] = {}
  for name, lines in comps.items():
    out = []
    for line in lines:
      m = inst_re.match(line)
      if not m:
        continue
      iname, typ, op, rest = m.groups()
      shapes[iname] = typ
      out.append((iname, typ, op, rest))
    parsed[name] = out
  # Call edges (caller, callee, times per call or "cond"), then each computation's multiplicity.
  edges = []
  for name, insts in parsed.items():
    for _, _, op, rest in insts:
      if op == "fusion":
        for callee in re.findall(r"calls=%?([\w.\-]+)", rest):
          fused.add(callee)
          edges.append((name, callee, 1))
      elif op == "while":
        trip = re.search(r'"known_trip_count":\{"n":"(\d+)"', rest)
        cond = re.search(r"condition=%?([\w.\-]+)", rest)
        n = (
          int(trip.group(1))
          if trip
          else _trip_from_condition(parsed.get(cond.group(1), []) if cond else [])
        )
        for key in ("body", "condition"):
          for callee in re.findall(key + r"=%?([\w.\-]+)", rest):
            edges.append((name, callee, n))
      elif op in ("call", "async-start", "custom-call") or op.endswith("-start"):
        for callee in re.findall(r"(?:to_apply|calls)=%?([\w.\-]+)", rest):
          if op != "custom-call" and not op.startswith("all-reduce"):
            edges.append((name, callee, 1))
      elif op == "conditional":
        for group in re.findall(r"branch_computations=\{([^}]*)\}", rest):
          for callee in re.findall(r"%?([\w.\-]+)", group):
            edges.append((name, callee, "cond"))
        for callee in re.findall(r"(?:true|false)_computation=%?([\w.\-]+)", rest):
          edges.append((name, callee, "cond"))
  full = _propagate(entry, edges)
  out = _accumulate(parsed, shapes, fused, full)
  if any(c for _, _, c in edges if c == "cond"):
    out["without_conditionals"] = _accumulate(
      parsed, shapes, fused, _propagate(entry, [e for e in edges if e[2] != "cond"])
    )
  return out


def _trip_from_condition(insts: list[tuple]) -> int:
  """A ``while`` loop's trip count read off its condition when the compiler recorded none (TPU
  HLO carries no ``known_trip_count``): ``counter < N`` with one integer scalar constant N, the
  form jax's ``scan`` and ``fori_loop`` lower to (counter from 0); 1 when the condition is
  anything else."""
  import re

  consts = [
    int(m.group(1))
    for _, typ, op, rest in insts
    if op == "constant" and re.match(r"[su](8|16|32|64)\[\]", typ)
    for m in [re.match(r"(-?\d+)\)", rest)]
    if m
  ]
  less = any(op == "compare" and "direction=LT" in rest for _, _, op, rest in insts)
  return consts[0] if less and len(consts) == 1 and consts[0] > 0 else 1


def _propagate(entry: str | None, edges: list[tuple]) -> dict[str, int]:
  """How often each computation runs per call of ``entry`` (a conditional's branches once)."""
  mult = {entry: 1} if entry else {}
  for _ in range(64):
    new = dict(mult)
    for a, b, n in edges:
      if a in mult:
        new[b] = max(new.get(b, 0), mult[a] * (1 if n == "cond" else n))
    if new == mult:
      break
    mult = new
  return mult


_SLICING = ("gather", "dynamic-slice")


def _sliced_params(insts: list[tuple], shapes: dict) -> dict[int, int]:
  """Parameters of a fused computation that are only read through gathers / dynamic slices
  (operand 0): ``{parameter index: bytes those slices read}`` (their results), so a kernel that
  gathers a few rows of a large array is not charged the whole array."""
  import re

  params = {}
  for iname, _, op, rest in insts:
    if op == "parameter":
      m = re.match(r"(\d+)\)", rest)
      if m:
        params[iname] = int(m.group(1))
  out = {}
  for pname, index in params.items():
    users = [
      (typ, op, re.findall(r"%([\w.\-]+)", rest.split("), ")[0]))
      for _, typ, op, rest in insts
      if re.search(r"%" + re.escape(pname) + r"\b", rest.split("), ")[0])
    ]
    if users and all(op in _SLICING and ops[:1] == [pname] for _, op, ops in users):
      out[index] = sum(_shape_bytes_dims(typ)[0] for typ, _, _ in users)
  return out


def _accumulate(parsed: dict, shapes: dict, fused: set, mult: dict) -> dict:
  """Collectives, matmul FLOPs, kernel bytes and kernels of ``parsed`` weighted by ``mult``."""
  import re

  sliced = {name: _sliced_params(insts, shapes) for name, insts in parsed.items() if name in fused}
  coll: dict[str, dict] = {}
  flops, kbytes, kernels = 0.0, 0, 0
  for name, insts in parsed.items():
    w = mult.get(name, 0)
    if not w:
      continue
    for _, typ, op, rest in insts:
      base = op[: -len("-start")] if op.endswith("-start") else op
      if base in _COLLECTIVES:
        c = coll.setdefault(base, {"count": 0, "bytes": 0})
        c["count"] += w
        nbytes, _ = _shape_bytes_dims(typ)
        if op.endswith("-start") and typ.startswith("("):  # async tuple: (operands, results)
          nbytes = nbytes // 2
        c["bytes"] += w * nbytes
      if op in ("dot", "convolution") or (op == "custom-call" and "gemm" in rest):
        flops += w * _matmul_flops(op, typ, rest, shapes)
      if name in fused or op in _NO_KERNEL or op.endswith("-done"):
        continue
      kernels += w
      operands = re.findall(r"%([\w.\-]+)", rest.split("), ")[0])
      out_bytes = _shape_bytes_dims(typ)[0]
      cheap = {}
      if op == "fusion":
        callee = re.search(r"calls=%?([\w.\-]+)", rest)
        cheap = sliced.get(callee.group(1), {}) if callee else {}
      elif op in _SLICING:
        cheap = {0: out_bytes}
      kb = out_bytes
      for i, o in enumerate(operands):
        if o in shapes:
          kb += cheap.get(i, _shape_bytes_dims(shapes[o])[0])
      kbytes += w * kb
  return {"collectives": coll, "matmul_flops": flops, "kernel_bytes": kbytes, "kernels": kernels}


# ----------------------------------------------------------------------------------------------
# Mosaic GPU kernels compiled for a compile-only H200 (sm_90a): PTX and ptxas report from the
# plugin's dump (MOSAIC_GPU_DUMP_PTX / _PTXAS / _TO), SASS from the triton wheel's ptxas and
# cuobjdump. Tooling only.


def mgpu_compile(f: Callable, specs: Sequence) -> list[dict]:
  """Compiles ``jax.jit(f)`` for a compile-only H200 (``jax.default_device`` set to it, so the
  kernels' own dispatch sees compute capability 9.0) and returns, per Mosaic GPU kernel,
  ``{"name", "ptx", "registers", "spill_stores", "spill_loads", "seconds"}``. A kernel already
  compiled in this process (the same Mosaic module) is not compiled, nor dumped, again.
  Needs the compile venv (jax-cuda13-plugin + pjrt)."""
  import glob
  import re
  import tempfile
  import time

  dev = gpu_devices("1x1x1")[0]
  keys = ("MOSAIC_GPU_DUMP_PTX", "MOSAIC_GPU_DUMP_PTXAS", "MOSAIC_GPU_DUMP_TO")
  old = {k: os.environ.get(k) for k in keys}
  out = []
  with tempfile.TemporaryDirectory() as tmp:
    os.environ.update(MOSAIC_GPU_DUMP_PTX="1", MOSAIC_GPU_DUMP_PTXAS="1", MOSAIC_GPU_DUMP_TO=tmp)
    t0 = time.perf_counter()
    try:
      with jax.default_device(dev):
        jax.jit(f).trace(*specs_on(dev, specs)).lower().compile()
    finally:
      for k, v in old.items():
        if v is None:
          os.environ.pop(k, None)
        else:
          os.environ[k] = v
    seconds = time.perf_counter() - t0
    for path in sorted(glob.glob(os.path.join(tmp, "*.ptx"))):
      with open(path) as fh:
        ptx = fh.read()
      report = ""
      if os.path.exists(path + "as"):
        with open(path + "as") as fh:
          report = fh.read()
      num = lambda pat: int(m.group(1)) if (m := re.search(pat, report)) else -1
      out.append(
        dict(
          name=os.path.basename(path)[: -len(".ptx")],
          ptx=ptx,
          registers=num(r"Used (\d+) registers"),
          spill_stores=num(r"(\d+) bytes spill stores"),
          spill_loads=num(r"(\d+) bytes spill loads"),
          seconds=round(seconds, 1),
        )
      )
  return out


def _ptx_statements(lines) -> list[str]:
  """PTX instructions in ``lines`` (inline-asm blocks split at ';'); directives, labels, braces,
  register declarations and comments are not counted."""
  out = []
  for line in lines:
    for stmt in line.split(";"):
      s = stmt.strip().strip("{}").strip()
      if not s or s.startswith(("//", ".", "$", "@$")) or s.endswith(":"):
        continue
      out.append(s)
  return out


def ptx_loop_instructions(ptx: str, marker: str = "ld.shared") -> tuple[int, int]:
  """``(instructions in the innermost loop whose body contains marker, instructions in the whole
  kernel)`` of PTX text (per thread, static counts; -1 for the loop when there is none)."""
  import re

  lines = ptx.splitlines()
  best = -1
  for i, line in enumerate(lines):
    m = re.match(r"^(\$L__BB\d+_\d+):", line)
    if not m:
      continue
    back = re.compile(r"\bbra(?:\.uni)?\s+" + re.escape(m.group(1)) + ";")
    end = next((j for j in range(i + 1, len(lines)) if back.search(lines[j])), None)
    if end is None:
      continue
    body = lines[i + 1 : end + 1]
    if any(re.match(r"^\$L__BB\d+_\d+:", l) for l in body):  # not innermost
      continue
    stmts = _ptx_statements(body)
    if any(s.startswith(marker) or f" {marker}" in s for s in stmts):
      best = len(stmts) if best < 0 else min(best, len(stmts))
  start = next((i for i, l in enumerate(lines) if l.strip().startswith(".entry")), 0)
  return best, len(_ptx_statements(lines[start:]))


def sass_of(ptx: str) -> tuple[list[tuple[int, str]], str]:
  """PTX text compiled for sm_90a by the triton wheel's ptxas (the plugin's PTX is ISA 9.0, the
  wheel's ptxas reads 8.7: the version line is rewritten) and listed by its cuobjdump:
  ``(instructions, report)``, the (address, instruction) pairs in order and ptxas's ``-v`` report
  (registers, spill bytes)."""
  import re
  import subprocess
  import tempfile

  import triton

  bin_dir = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
  with tempfile.TemporaryDirectory() as tmp:
    src, cubin = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
    with open(src, "w") as fh:
      fh.write(re.sub(r"^\.version 9\.\d", ".version 8.7", ptx, flags=re.M))
    rep = subprocess.run(
      [os.path.join(bin_dir, "ptxas"), "-arch=sm_90a", "-v", "-o", cubin, src],
      capture_output=True, text=True, check=True,
    )  # fmt: skip
    sass = subprocess.run(
      [os.path.join(bin_dir, "cuobjdump"), "-sass", cubin],
      capture_output=True,
      text=True,
      check=True,
    ).stdout
  insts = []
  for line in sass.splitlines():
    m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
    if m:
      insts.append((int(m.group(1), 16), m.group(2)))
  return insts, rep.stderr + rep.stdout


def sass_loop_instructions(ptx: str, marker: str = "LDS") -> dict:
  """SASS of PTX text for sm_90a (``sass_of``): ``{"loop", "total", "registers",
  "spill_stores"}``, ``loop`` = instructions in the innermost backward-branch loop containing
  ``marker`` (-1: none), ``total`` = instructions up to the final EXIT."""
  import re

  insts, report = sass_of(ptx)
  addr_index = {a: i for i, (a, _) in enumerate(insts)}
  best = -1
  for i, (_, text) in enumerate(insts):
    m = re.search(r"\bBRA\s+(?:`\()?(?:0x)?([0-9a-f]+)", text)
    if not m or int(m.group(1), 16) not in addr_index:
      continue
    start = addr_index[int(m.group(1), 16)]
    if start >= i:
      continue
    body = [t for _, t in insts[start : i + 1]]
    inner = any(
      (mm := re.search(r"\bBRA\s+(?:0x)?([0-9a-f]+)", t)) and addr_index.get(int(mm.group(1), 16), -1) > start
      for t in body[:-1]
    )  # fmt: skip
    if inner or not any(re.search(rf"\b{marker}\b", t) for t in body):
      continue
    best = len(body) if best < 0 else min(best, len(body))
  exit_at = max(
    (i for i, (_, t) in enumerate(insts) if re.search(r"\bEXIT\b", t)), default=len(insts)
  )
  num = lambda pat: int(m.group(1)) if (m := re.search(pat, report)) else -1
  return dict(
    loop=best,
    total=exit_at + 1,
    registers=num(r"Used (\d+) registers"),
    spill_stores=num(r"(\d+) bytes spill stores"),
  )


def lut_facts(f: Callable, specs: Sequence, weights_per_iteration: int, planes: int = 2) -> dict:
  """Compiled facts of the bit-plane LUT kernel (``kernel_mgpu``) in ``jax.jit(f)`` for sm_90a:
  registers and spills (ptxas), and PTX / SASS instructions per (weight, plane) per thread, in the
  hot loop (one plane: ``weights_per_iteration`` = 256 · tiles · columns per thread) and for the
  whole kernel at one row and ``planes`` planes ((total − loop + planes · loop) / (planes ·
  weights_per_iteration): the table build, scales and epilogue included; static counts)."""
  [k] = [k for k in mgpu_compile(f, specs) if "lut" in k["name"]]
  loop, total = ptx_loop_instructions(k["ptx"])
  sass = sass_loop_instructions(k["ptx"])
  whole = lambda lp, tot: (tot - lp + planes * lp) / (planes * weights_per_iteration)
  return dict(
    name=k["name"],
    registers=k["registers"],
    spill_stores=k["spill_stores"],
    spill_loads=k["spill_loads"],
    ptx_loop=loop,
    ptx_total=total,
    ptx_per_wp_loop=round(loop / weights_per_iteration, 3),
    ptx_per_wp_kernel=round(whole(loop, total), 3),
    sass_loop=sass["loop"],
    sass_total=sass["total"],
    sass_per_wp_loop=round(sass["loop"] / weights_per_iteration, 3),
    sass_per_wp_kernel=round(whole(sass["loop"], sass["total"]), 3),
    sass_registers=sass["registers"],
    seconds=k["seconds"],
  )
