"""Compile tier: every method's training step compiled for a TPU pod slice and an 8-GPU host, no chip.

The step is the trainer's own (``benchmarks.accelerator_plan.build_step``: the registry's
``Method``, the mesh and state shardings from the config, ``make_step_fn`` /
``make_device_step_fn`` jitted with the trainer's shardings and donation) at smoke scale, compiled
ahead of time for the 16-device TPU v5e slice (``v5e:4x4``, 4 hosts) and 8 compile-only H200s
(``1x1x8``). The compiled, partitioned program must be data parallel: the batch sharded over
``data`` and the gradients summed across devices (all-reduce), and with ``param_sharding=fsdp``
the parameters all-gathered. Skipped, with the reason, without libtpu or the CUDA plugin (the
compile venv has both).

PDNS and DSB draw their batch inside ``update`` from the state's key (``get_batch`` returns
``{}``): there is no batch argument to shard; the step marks the rows it draws with
``core.sharding.shard_rows`` (split over ``data`` under the trainer's ``rows_mesh``), and the
all-reduce of the gradients shows that the per-sample work is split.
"""

import functools

import jax
import numpy as np
import pytest

from benchmarks import _targets
from benchmarks import accelerator_plan as plan

_TPU, _TPU_WHY = _targets.libtpu_available()
_GPU, _GPU_WHY = _targets.cuda_available()

# One test per method (built once, both targets compiled): spread over both workers.
pytestmark = pytest.mark.split_params

TARGETS = {"v5e-16": (_TPU, _TPU_WHY), "h200x8": (_GPU, _GPU_WHY)}


@functools.lru_cache(maxsize=None)
def _method(name: str):
  config = plan.load_config(name, plan.METHODS[name][2])
  return plan.make_method(name, config, "smoke"), config


def _param_bytes(method) -> int:
  """Bytes of the parameters one step differentiates."""
  abstract = jax.eval_shape(method.init_state, jax.random.PRNGKey(0))
  params = abstract.params
  if getattr(method, "csbm_type", False) and not method.solver.joint_optimizer:
    # CSBM (DSB's plan config) trains one direction per step (the other's parameters are
    # selected away): its gradient is one network's, half of {"forward", "backward"}.
    params = params["forward"]
  return int(sum(np.prod(x.shape) * x.dtype.itemsize for x in jax.tree.leaves(params)))


def _data_parallel(name: str, method, compiled, path: str) -> str | None:
  """Why ``compiled`` is not a data-parallel step of ``method``, or None."""
  facts = _targets.hlo_facts(compiled.as_text())
  if path == "host batch":  # the batch enters sharded over `data` along its rows
    batch_sh = jax.tree.leaves(compiled.input_shardings[0][1])
    drawn_in_step = not jax.tree.leaves(method.get_batch(0))  # PDNS, DSB: ``shard_rows`` inside
    if (not batch_sh and not drawn_in_step) or any(s.spec[0] != "data" for s in batch_sh):
      return f"batch not sharded over data: {batch_sh}"
  reduce = facts["collectives"].get("all-reduce", {"count": 0, "bytes": 0})
  if not reduce["count"]:
    return f"no all-reduce in the compiled step: {facts['collectives']}"
  if name == "lmkan":
    # lmKAN's spline backward all-gathers the batch's cells and weights and forms the table
    # gradient on every device (the all-reduces are BatchNorm's statistics and the small leaves).
    if not facts["collectives"].get("all-gather", {"count": 0})["count"]:
      return "lmKAN: no all-gather of the batch's cells and weights"
    return None
  # Every parameter's gradient is summed over the devices: at least 90 % of the parameter bytes
  # (a parameter whose loss term does not depend on the batch, e.g. MinPV's path penalty on a
  # fixed time grid, needs no sum: 48 of MinPV's 21184 bytes on v5e).
  if reduce["bytes"] < 0.9 * _param_bytes(method):
    return f"all-reduce {reduce['bytes']} B < 90 % of the parameters' {_param_bytes(method)} B"
  return None


METHOD_NAMES = tuple(plan.METHODS)


@pytest.mark.parametrize("name", METHOD_NAMES)
def test_method_step_compiles_data_parallel(name):
  """The method's step compiles for both targets (one method build) and is data parallel there."""
  for ok, why in TARGETS.values():
    if not ok:
      pytest.skip(why)
  method, config = _method(name)
  problems = []
  for target in TARGETS:
    devices = plan.devices_for(target)
    assert len(devices) == plan.TARGETS[target]["devices"]
    compiled, path, _ = plan.compile_step(method, config, devices)
    assert _targets.memory_facts(compiled).get("argument_size_in_bytes", 0) > 0
    why_not = _data_parallel(name, method, compiled, path)
    if why_not:
      problems.append(f"{target}: {why_not}")
  assert not problems, problems


@pytest.mark.skipif(not _TPU, reason=_TPU_WHY)
def test_fsdp_step_all_gathers_parameters():
  # AnyBCQ's smoke TinyLM: its 32 x 128 MLP kernels are sharded 16 ways under fsdp.
  method, config = _method("anybcq")
  devices = plan.devices_for("v5e-16")
  rep, _, _ = plan.compile_step(method, config, devices)
  fsdp, _, _ = plan.compile_step(method, config, devices, "fsdp")
  gathers = _targets.hlo_facts(fsdp.as_text())["collectives"].get("all-gather", {"count": 0})
  assert gathers["count"] > 0
  rep_bytes = _targets.memory_facts(rep)["argument_size_in_bytes"]
  fsdp_bytes = _targets.memory_facts(fsdp)["argument_size_in_bytes"]
  assert fsdp_bytes < rep_bytes, (fsdp_bytes, rep_bytes)  # the state is split over the devices
