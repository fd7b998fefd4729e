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
  sh = jax.sharding.SingleDeviceSharding(device)
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

  return _record_lowering(tl, "lower_jaxpr_to_triton_module", keep, f, specs, "cuda")


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
