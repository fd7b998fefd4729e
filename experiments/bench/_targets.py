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
  return tuple(None if s is None else jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sh)
               for s in specs)


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
  return {k: int(getattr(ma, k)) for k in ("argument_size_in_bytes", "output_size_in_bytes",
                                            "temp_size_in_bytes") if hasattr(ma, k)}
