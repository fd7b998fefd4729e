r"""Accelerator plan: each method's training step compiled for GPUs and TPU pod slices, no chip.

For each method's accelerator-scale config, the step is built as ``experiments.main`` and
``core.trainer`` build it: the ``Method`` from ``experiments.registry``, the mesh from
``config.mesh`` over the target's devices (``core.sharding.make_mesh``), the state shardings from
``config.param_sharding`` (``core.sharding.state_shardings``), and ``make_device_step_fn`` (data on
the devices, replicated) or ``make_step_fn`` (a host batch sharded over ``data``) jitted with the
trainer's in/out shardings and the state donated. It is then compiled ahead of time, with no chip,
for the targets of ``TARGETS``: 1, 8 (one host) and 16 (two hosts) compile-only H200s from
``jax-cuda12-plugin`` and TPU pod slices from libtpu (``_targets``).

Per cell it reports, from the compiled program (facts): per-device argument, output, aliased
(donated) and temporary bytes against the device's HBM; the collectives (kind, count, bytes) and
the per-device matmul FLOPs and kernel bytes counted in the compiled HLO text
(``_targets.hlo_facts``); the compile time. From those, **estimates**: a roofline step time
(``max(FLOPs / peak, bytes / HBM bandwidth) + collective bytes / link bandwidth + kernels x launch
overhead``, peaks and their sources in ``TARGETS``) and the wall time of the config's whole run
(``num_steps`` x step time; nothing for evaluation, checkpoints or input). A config that does not
fit one device is compiled again with ``param_sharding=fsdp``.

Methods whose loop is staged (PDNS proximal stages, DSB solvers) run through the same trainer with a
step that draws its batch inside ``update`` (``get_batch`` returns ``{}``); their compiled step is
that ``update`` (PDNS: the stage / epoch refresh under ``lax.cond`` included, so its counts hold
the refresh on every step: an upper bound).

Each target family runs in a subprocess of its own (libtpu reads its accelerator type from the
environment once per process). Run from the repository root, in the compile venv:

  ALLOW_MULTIPLE_LIBTPU_LOAD=1 JAX_PLATFORMS=cpu .venv-compile/bin/python -m \
      benchmarks.accelerator_plan    # writes results/accelerator_plan.md and .json
  ... --methods=toy,qam --targets=h200x1,v5e-16 --scale=smoke    # a subset: printed only
  ... --config=experiments/configs/minpv/gaussian_mi.py:paper,batch_size=65536 --targets=h200x1

``--config=FILE.py[:ARG]`` checks one config of your own (any file ``experiments.main`` takes)
instead of the methods' accelerator-scale ones: does it fit, and what would the run cost.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback

if __package__ in (None, ""):  # run as a file: make the repository root importable
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app, flags  # pylint: disable=g-import-not-at-top

from experiments import _cli  # pylint: disable=g-import-not-at-top

CONFIGS = "experiments/configs"
# The committed report (results/accelerator_plan.md and .json; the device check reads the JSON):
# where the full plan (every method and target at paper scale, no --config) is written by default.
DEFAULT_OUT = os.path.join(
  os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results", "accelerator_plan"
)

# method -> (config file, accelerator-scale arg, smoke arg, what is compiled). The accelerator-scale
# arg is the setting the method's ``--full`` claims and its docstring name as the paper's.
METHODS = {
  "qam": (
    "qam/ogbench_puzzle3x3.py",
    "",
    "smoke",
    "QAM offline update (puzzle-3x3, 4x512, K=10, N=10, H=5, batch 256, 1M transitions on device)",
  ),
  "minpv": (
    "minpv/gaussian_mi.py",
    "paper",
    "smoke",
    "MinPV update (d=10, batch 9600, 4x256, 512 time features; host batch)",
  ),
  "pdns": (
    "pdns/ising.py",
    "",
    "smoke",
    "PDNS stage update (Ising 24x24, buffer 4096, batch 256, stage/epoch refresh in lax.cond)",
  ),
  "dsb": (
    "dsb/csbm.py",
    "",
    "smoke",
    "CSBM step_fn (D=16, S=50, SimpleMLP 3x128, batch 128, drawn in the step)",
  ),
  "lmkan": (
    "lmkan/teacher.py",
    "paper",
    "smoke",
    "lmKAN update (32->128->128->128->1 on the sin-MLP teacher, G=8 tables, batch 512, 6000 steps; "
    "data on device)",
  ),
  "anybcq": (
    "anybcq/lm.py",
    "",
    "smoke",
    "TinyLM training update (width 128, depth 2, context 128, batch 32; host batch)",
  ),
  "toy": ("toy/regression.py", "", "smoke", "toy regression update (data on device)"),
}

# QAM's OGBench data: the trainer keeps the whole offline set on the devices. The plan does not
# generate it (hours of MuJoCo); it takes the shapes: puzzle-3x3-play has 55-D observations and 5-D
# actions (gymnasium.make("puzzle-3x3-v0") in ogbench 1.2.2), 1000 episodes x 1000 steps (the
# paper's data size; ``data.generate_episodes`` x ``data.generate_length`` when the config sets
# them).
OGBENCH_DIMS = {"puzzle-3x3": (55, 5)}
OGBENCH_EPISODES = 1000

# Target -> family, devices, hosts, HBM bytes per device, dense matrix peak FLOP/s per device (bf16
# on TPU, where f32 dots at default precision run as bf16 passes; TF32 on H200, which XLA uses for
# f32 dots at default precision), HBM bytes/s, the link the data-parallel collectives cross
# (bytes/s per device, one direction), per-kernel launch overhead (an assumption), sources.
H200 = "NVIDIA H200 datasheet: 141 GB HBM3e, 4.8 TB/s, TF32 989 TFLOP/s with sparsity (494.5 dense)"
NVLINK = "NVLink 4: 900 GB/s per GPU (450 GB/s each way)"
IB = "2 hosts: ConnectX-7 NDR 400 Gb/s per GPU (50 GB/s each way), the ring's slowest link"
TARGETS = {
  "h200x1": dict(
    family="gpu", topology="1x1x1", devices=1, hosts=1, hbm=141e9, peak=494.5e12, bw=4.8e12,
    link=0.0, launch=2e-6, source=H200,
  ),
  "h200x8": dict(
    family="gpu", topology="1x1x8", devices=8, hosts=1, hbm=141e9, peak=494.5e12, bw=4.8e12,
    link=450e9, launch=2e-6, source=f"{H200}; {NVLINK}",
  ),
  "h200x16": dict(
    family="gpu", topology="2x1x8", devices=16, hosts=2, hbm=141e9, peak=494.5e12, bw=4.8e12,
    link=50e9, launch=2e-6, source=f"{H200}; {IB}",
  ),
  "v5e-16": dict(
    family="v5e-16", devices=16, hosts=4, hbm=16e9, peak=197e12, bw=819e9, link=200e9 / 4,
    launch=1e-6,
    source="cloud.google.com/tpu/docs/v5e: 16 GB HBM2, 819 GB/s, 197 TFLOP/s bf16, ICI 1600 Gb/s "
    "per chip (200 GB/s over 4 links; one link's 50 GB/s taken for the ring)",
  ),
  "v5p-8": dict(
    family="v5p-8", devices=8, hosts=2, hbm=95e9, peak=459e12, bw=2765e9, link=600e9 / 6,
    launch=1e-6,
    source="cloud.google.com/tpu/docs/v5p: 95 GB HBM2e, 2765 GB/s, 459 TFLOP/s bf16, ICI 4800 Gb/s "
    "per chip (600 GB/s over 6 links; one link's 100 GB/s taken for the ring)",
  ),
}  # fmt: skip
LAUNCH_NOTE = (
  "GPU: 2 µs per kernel launched (an assumption: XLA's command buffers / CUDA graphs hide part of "
  "it); TPU: 1 µs per top-level fusion (an assumption: one program, no launches, but each op's "
  "pipeline fill and drain)"
)


# ------------------------------------------------------------------------------------------------
# Building the trainer's step (worker side: jax imported here, after the environment is set).


def load_config(name: str, arg: str):
  """The method's config from its file with ``arg`` applied, as ``experiments.main`` loads it."""
  return load_config_file(os.path.join(CONFIGS, METHODS[name][0]), arg)


def load_config_file(path: str, arg: str):
  """``get_config(arg)`` of the config file ``path`` (``arg`` "" for the defaults)."""
  import importlib.util

  name = "plan_config_" + "".join(ch if ch.isalnum() else "_" for ch in path)
  spec = importlib.util.spec_from_file_location(name, path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module.get_config(arg) if arg else module.get_config()


def make_method(name: str, config, scale: str):
  """``registry.get_method(config.method)(config)``; QAM's OGBench data (a known env of
  ``OGBENCH_DIMS``) replaced by zero-cost arrays of the real shapes: only their shapes enter the
  compiled program."""
  del name, scale
  from experiments import registry

  registry.validate(config)
  cls = registry.get_method(config.method)
  dims = None
  if config.method == "qam":
    dims = next((v for k, v in OGBENCH_DIMS.items() if k in str(config.data.name)), None)
  if dims is None:
    return cls(config)
  import numpy as np
  from iclr26_jax.qam import method as qam_method

  episodes = int(config.data.generate_episodes) or OGBENCH_EPISODES
  t, (obs, act) = episodes * int(config.data.generate_length), dims
  z = np.zeros((), np.float32)
  fake = {
    "observations": np.broadcast_to(z, (t, obs)),
    "next_observations": np.broadcast_to(z, (t, obs)),
    "actions": np.broadcast_to(z, (t, act)),
    "rewards": np.broadcast_to(z, (t,)),
    "masks": np.broadcast_to(z, (t,)),
    "terminals": np.broadcast_to(z, (t,)),
  }
  orig = qam_method.load_data
  qam_method.load_data = lambda c: (fake, None)
  try:
    return cls(config)
  finally:
    qam_method.load_data = orig


def build_step(method, config, devices, param_sharding: str | None = None):
  """The trainer's jitted step for ``method`` over ``devices`` and its abstract arguments.

  Returns:
    ``(jitted, args, path)``: ``jitted.trace(*args).lower().compile()`` compiles it; ``path`` is
    "device data" or "host batch".
  """
  import jax
  import jax.numpy as jnp
  import numpy as np

  from iclr26_jax.core import sharding as shd
  from iclr26_jax.core import trainer

  mesh = shd.make_mesh(dict(config.mesh), devices=devices)
  rng = jax.random.PRNGKey(int(config.seed))
  abstract = jax.eval_shape(method.init_state, rng)
  state_sh = shd.state_shardings(abstract, mesh, param_sharding or config.param_sharding)
  rep = shd.replicated(mesh)
  spec = lambda x: jax.ShapeDtypeStruct(
    np.shape(x), jax.dtypes.canonicalize_dtype(np.asarray(x).dtype)
  )
  first_bad = jax.ShapeDtypeStruct((), jnp.int32)
  data = method.device_data()
  if data is not None:
    data_specs = jax.tree.map(spec, data)
    data_sh = jax.tree.map(lambda _: rep, data_specs)
    fn = jax.jit(
      trainer.make_device_step_fn(method, mesh),
      in_shardings=(state_sh, data_sh, rep),
      out_shardings=(state_sh, rep, rep),
      donate_argnums=(0,),
    )
    return fn, (abstract, data_specs, first_bad), "device data"
  batch = method.get_batch(0)  # this process's rows = all rows (one process here)
  batch_specs = jax.tree.map(spec, batch)
  batch_sh = jax.tree.map(lambda x: shd.batch_sharding(mesh, len(x.shape)), batch_specs)
  fn = jax.jit(
    trainer.make_step_fn(method.update, mesh),
    in_shardings=(state_sh, batch_sh, rep),
    out_shardings=(state_sh, rep, rep),
    donate_argnums=(0,),
  )
  return fn, (abstract, batch_specs, first_bad), "host batch"


def compile_step(method, config, devices, param_sharding: str | None = None):
  """``(compiled, path, seconds)``: the trainer's step compiled for ``devices``."""
  fn, args, path = build_step(method, config, devices, param_sharding)
  t0 = time.perf_counter()
  compiled = fn.trace(*args).lower().compile()
  return compiled, path, time.perf_counter() - t0


def devices_for(target: str):
  """The compile-only devices of ``target`` (a key of ``TARGETS``)."""
  from benchmarks import _targets

  t = TARGETS[target]
  if t["family"] == "gpu":
    return list(_targets.gpu_devices(t["topology"]))
  return list(_targets.tpu_slice_devices(t["family"]))


def cell_facts(compiled, seconds: float, target: str) -> dict:
  """Facts of one compiled cell (memory, collectives, FLOPs, bytes) and the estimates from them."""
  from benchmarks import _targets

  t = TARGETS[target]
  mem = _targets.memory_facts(compiled)
  alias = 0
  try:
    alias = int(compiled.memory_analysis().alias_size_in_bytes)
  except Exception:  # noqa: BLE001 - not every backend fills it
    pass
  arg, out, tmp = (
    mem.get("argument_size_in_bytes", 0),
    mem.get("output_size_in_bytes", 0),
    mem.get("temp_size_in_bytes", 0),
  )
  total = arg + out - alias + tmp
  hlo = _targets.hlo_facts(compiled.as_text())
  xla_cost = None
  try:
    ca = compiled.cost_analysis()
    ca = ca[0] if isinstance(ca, (list, tuple)) else ca
    if ca:
      xla_cost = {"flops": float(ca.get("flops", 0.0)), "bytes": float(ca.get("bytes accessed", 0))}
  except Exception:  # noqa: BLE001 - GPU compile-only: None
    pass
  compute, memory, comm, launch, step = _roofline(hlo, t, arg + out - alias)
  low = hlo.get("without_conditionals")
  step_lo = _roofline(low, t, arg + out - alias)[-1] if low else step
  return dict(
    compile_s=round(seconds, 1),
    argument=arg,
    output=out,
    alias=alias,
    temp=tmp,
    total=total,
    fits=bool(total <= t["hbm"]),
    collectives=hlo["collectives"],
    matmul_flops=hlo["matmul_flops"],
    kernel_bytes=hlo["kernel_bytes"],
    kernels=hlo["kernels"],
    xla_cost=xla_cost,
    est_compute_s=compute,
    est_memory_s=memory,
    est_comm_s=comm,
    est_launch_s=launch,
    est_step_s=step,
    est_step_lo_s=step_lo,
    cond_free=low,
  )


def _roofline(hlo: dict, t: dict, min_bytes: int) -> tuple[float, ...]:
  """(compute, memory, collectives, launches, step) seconds: the estimate's terms for one step."""
  n = t["devices"]
  comm = 0.0
  for kind, c in hlo["collectives"].items():
    factor = 2.0 * (n - 1) / n if kind == "all-reduce" else (n - 1) / n
    comm += factor * c["bytes"] / t["link"] if t["link"] else 0.0
  compute = hlo["matmul_flops"] / t["peak"]
  memory = max(hlo["kernel_bytes"], min_bytes) / t["bw"]
  launch = hlo["kernels"] * t["launch"]
  return compute, memory, comm, launch, max(compute, memory) + comm + launch


def run_worker(
  family: str, names: list[str], targets: list[str], scale: str, out: str, config_spec: str = ""
) -> None:
  """Compiles every (method, target) of one family; appends one JSON line per cell to ``out``
  (the method's name under the key ``"method"``). With ``config_spec`` ("FILE.py[:ARG]") that one
  config is the only method."""
  import jax

  def emit(rec):
    with open(out, "a") as f:
      f.write(json.dumps(rec, default=str) + "\n")

  mine = [t for t in targets if TARGETS[t]["family"] == family]
  for name in names:
    if config_spec:
      path, _, arg = config_spec.partition(":")
    else:
      arg = METHODS[name][1] if scale == "paper" else METHODS[name][2]
      path = os.path.join(CONFIGS, METHODS[name][0])
    try:
      config = load_config_file(path, arg)
      method = make_method(name, config, scale)
    except Exception as e:  # noqa: BLE001 - one line per cell
      for target in mine:
        emit({"method": name, "target": target, "error": f"build: {_first_line(e)}"})
      continue
    base = {"method": name, "arg": arg, "num_steps": int(config.num_steps)}
    for target in mine:
      rec = dict(base, target=target, mode=str(config.param_sharding))
      try:
        devices = devices_for(target)
        compiled, path, secs = compile_step(method, config, devices)
        rec.update(path=path, **cell_facts(compiled, secs, target))
        del compiled
      except Exception as e:  # noqa: BLE001 - one line per cell
        rec["error"] = _first_line(e)
        traceback.print_exc(file=sys.stderr)
      emit(rec)
      if rec.get("fits") is False and TARGETS[target]["devices"] > 1:
        rec2 = dict(base, target=target, mode="fsdp")
        try:
          compiled, path, secs = compile_step(method, config, devices, "fsdp")
          rec2.update(path=path, **cell_facts(compiled, secs, target))
          del compiled
        except Exception as e:  # noqa: BLE001
          rec2["error"] = _first_line(e)
        emit(rec2)
      jax.clear_caches()


def _first_line(e: BaseException) -> str:
  text = str(e).strip().splitlines()
  return f"{type(e).__name__}: {text[0][:200] if text else ''}"


# ------------------------------------------------------------------------------------------------
# Orchestration and the report (no jax here: each family compiles in its own subprocess).


def _fmt_bytes(n: float) -> str:
  for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
    if n >= size:
      return f"{n / size:.3g} {unit}"
  return f"{int(n)} B"


def _fmt_s(s: float) -> str:
  if s < 1e-3:
    return f"{s * 1e6:.3g} µs"
  if s < 1:
    return f"{s * 1e3:.3g} ms"
  if s < 120:
    return f"{s:.3g} s"
  if s < 7200:
    return f"{s / 60:.3g} min"
  if s < 3 * 86400:
    return f"{s / 3600:.3g} h"
  return f"{s / 86400:.3g} d"


def _collectives(c: dict) -> str:
  if not c:
    return "none"
  return ", ".join(f"{k} ×{v['count']} ({_fmt_bytes(v['bytes'])})" for k, v in sorted(c.items()))


def cell_text(rec: dict) -> str:
  """The short table cell of one record: fits / memory / estimated run time, or why not."""
  if rec is None:
    return "not run"
  if "error" in rec:
    return "error: " + rec["error"].replace("|", "\\|")[:120]
  t = TARGETS[rec["target"]]
  fit = "fits" if rec["fits"] else "does not fit"
  mode = " (fsdp)" if rec["mode"] == "fsdp" else ""
  return f"{fit}{mode}: {_fmt_bytes(rec['total'])} / {_fmt_bytes(t['hbm'])}; run ≈ {run_text(rec)}"


def run_text(rec: dict) -> str:
  """The estimated run time, a range "lo – hi" when the step has conditionals (lo: no branch
  taken, hi: every branch on every step)."""
  hi = rec["num_steps"] * rec["est_step_s"]
  lo = rec["num_steps"] * rec.get("est_step_lo_s", rec["est_step_s"])
  return _fmt_s(hi) if lo >= 0.95 * hi else f"{_fmt_s(lo)} – {_fmt_s(hi)}"


def table(records: list[dict], names: list[str], targets: list[str]) -> str:
  """Methods × targets Markdown table (the best cell per pair: a fitting FSDP cell replaces a
  replicated one that does not fit)."""
  best = {}
  for r in records:
    key = (r["method"], r["target"])
    old = best.get(key)
    if (
      old is None
      or ("error" in old and "error" not in r)
      or ("error" not in r and not old.get("fits") and r.get("fits"))
    ):
      best[key] = r
  head = "| method | " + " | ".join(targets) + " |"
  lines = [head, "|" + " --- |" * (len(targets) + 1)]
  for name in names:
    lines.append(
      f"| {name} | " + " | ".join(cell_text(best.get((name, t))) for t in targets) + " |"
    )
  return "\n".join(lines)


def details(records: list[dict]) -> str:
  """One paragraph per cell: every compiled fact and estimate."""
  out = []
  for r in records:
    head = f"- **{r['method']} × {r['target']}** ({r.get('mode', '?')})"
    if "error" in r:
      out.append(f"{head}: not compiled: {r['error']}")
      continue
    t = TARGETS[r["target"]]
    cond = ""
    if r.get("cond_free"):
      c = r["cond_free"]
      cond = (
        f" with every conditional branch taken; without the work under conditionals "
        f"{c['matmul_flops'] / 1e9:.3g} GFLOP, {_fmt_bytes(c['kernel_bytes'])}, {c['kernels']} "
        f"kernels → step ≈ {_fmt_s(r['est_step_lo_s'])}"
      )
    xla = ""
    if r.get("xla_cost"):
      xla = (
        f"; XLA cost analysis {r['xla_cost']['flops'] / 1e9:.3g} GFLOP, "
        f"{_fmt_bytes(r['xla_cost']['bytes'])}"
      )
    out.append(
      f"{head}, {r['path']}, compiled in {r['compile_s']} s. Per device (compiled): arguments "
      f"{_fmt_bytes(r['argument'])}, outputs {_fmt_bytes(r['output'])} (aliased "
      f"{_fmt_bytes(r['alias'])}), temporaries {_fmt_bytes(r['temp'])}; peak ≈ "
      f"{_fmt_bytes(r['total'])} of {_fmt_bytes(t['hbm'])}. Collectives (compiled, per step): "
      f"{_collectives(r['collectives'])}. Counted in the HLO: {r['matmul_flops'] / 1e9:.3g} "
      f"GFLOP matmul, {_fmt_bytes(r['kernel_bytes'])} kernel traffic, {r['kernels']} kernels"
      f"{xla}. Estimates: compute {_fmt_s(r['est_compute_s'])}, memory "
      f"{_fmt_s(r['est_memory_s'])}, collectives {_fmt_s(r['est_comm_s'])}, launches "
      f"{_fmt_s(r['est_launch_s'])} → step ≈ {_fmt_s(r['est_step_s'])}"
      + cond
      + f"; {r['num_steps']} steps ≈ {run_text(r)} (estimate)."
    )
  return "\n".join(out)


def report(records, names, targets, command: str, versions: dict, wall_s: float) -> str:
  """The Markdown report (``OUT.md``; ``DEFAULT_OUT`` for the full plan)."""
  lines = [
    "# Accelerator plan: every method's training step compiled without a chip",
    "",
    f"Generated {datetime.date.today().isoformat()} by `{command}` "
    f"(jax {versions.get('jax')}, jaxlib {versions.get('jaxlib')}, libtpu "
    f"{versions.get('libtpu')}, jax-cuda12-plugin {versions.get('jax_cuda12_plugin')}) in "
    f"{wall_s / 60:.1f} min on a 2-core CPU host. Regenerate with that command.",
    "",
    "Compiled facts: per-device bytes (`memory_analysis()` of the compiled step), collectives, "
    "matmul FLOPs, kernel bytes and kernel counts (read off the compiled, partitioned HLO text), "
    "compile seconds. **Estimates** (never measured: no chip was used): the roofline step time "
    "`max(FLOPs / peak, bytes / HBM bandwidth) + collectives / link bandwidth + kernels × launch` "
    f"({LAUNCH_NOTE}) and the run time `num_steps × step` of the config (no evaluation, "
    "checkpoints or input pipeline). Small steps are launch- or latency-bound, which a roofline "
    "does not see well: read the run times as order-of-magnitude estimates. A step with "
    "`lax.cond` (PDNS's stage and epoch refresh, DSB's direction switch) gets a range: from the "
    "work outside every conditional to every branch taken on every step.",
    "",
    "Cells: fits / does not fit (per-device peak ≈ arguments + outputs − donated + temporaries, "
    "against HBM) and the estimated run time. `fsdp`: compiled again with "
    "`param_sharding=fsdp` because the replicated state did not fit.",
    "",
    table(records, names, targets),
    "",
    "## What was compiled",
    "",
  ]
  for name in names:
    if name not in METHODS:
      lines.append(f"- **{name}**: the config given with `--config`.")
      continue
    path, arg, _, what = METHODS[name]
    lines.append(f"- **{name}**: `{CONFIGS}/{path}{':' + arg if arg else ''}`: {what}.")
  lines += ["", "## Targets (peak figures and their sources)", ""]
  for name in targets:
    t = TARGETS[name]
    lines.append(
      f"- **{name}**: {t['devices']} devices over {t['hosts']} host(s); HBM "
      f"{_fmt_bytes(t['hbm'])}, {t['peak'] / 1e12:.4g} TFLOP/s, {t['bw'] / 1e12:.4g} TB/s"
      + (f", link {t['link'] / 1e9:.3g} GB/s" if t["link"] else "")
      + f". {t['source']}."
    )
  lines += ["", "## Every cell", "", details(records), ""]
  return "\n".join(lines)


def _versions() -> dict:
  from importlib import metadata

  out = {}
  for pkg in ("jax", "jaxlib", "libtpu", "jax_cuda12_plugin"):
    try:
      out[pkg] = metadata.version(pkg.replace("_", "-"))
    except metadata.PackageNotFoundError:
      out[pkg] = "not installed"
  return out


def plan(names, targets, scale: str, timeout_s: int, config_spec: str = "") -> tuple[list, float]:
  """Runs one worker subprocess per target family (sequentially) and collects their records."""
  families = []
  for t in targets:
    if TARGETS[t]["family"] not in families:
      families.append(TARGETS[t]["family"])
  records: list[dict] = []
  t0 = time.perf_counter()
  with tempfile.TemporaryDirectory() as tmp:
    for fam in families:
      out = os.path.join(tmp, f"{fam}.jsonl")
      env = dict(os.environ, JAX_PLATFORMS="cpu", ALLOW_MULTIPLE_LIBTPU_LOAD="1")
      cmd = [
        sys.executable,
        "-m",
        "benchmarks.accelerator_plan",
        f"--worker={fam}",
        f"--worker_out={out}",
        f"--methods={','.join(names)}",
        f"--targets={','.join(targets)}",
        f"--scale={scale}",
        f"--config={config_spec}",
      ]
      print(f"[plan] compiling for {fam} ...", flush=True)
      try:
        proc = subprocess.run(cmd, env=env, timeout=timeout_s, capture_output=True, text=True)
        fail = (
          proc.returncode
          and f"worker exited {proc.returncode}: "
          + (proc.stderr.strip().splitlines() or [""])[-1][:200]
        )
      except subprocess.TimeoutExpired:
        fail = f"worker timed out after {timeout_s} s"
      got = []
      if os.path.exists(out):
        with open(out) as f:
          got = [json.loads(line) for line in f if line.strip()]
      for r in got:
        print(f"[plan] {r['method']} × {r['target']}: {cell_text(r)}", flush=True)
      done = {(r["method"], r["target"]) for r in got}
      for name in names:
        for t in targets:
          if TARGETS[t]["family"] == fam and (name, t) not in done and fail:
            got.append({"method": name, "target": t, "error": fail})
      records += got
  return records, time.perf_counter() - t0


NAMES = ("methods", "targets", "scale", "config", "out", "timeout", "worker", "worker_out")


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
  """Defines this tool's flags in ``fv`` (called only when the file is the program)."""
  flags.DEFINE_list("methods", list(METHODS), f"Subset of {','.join(METHODS)}.", flag_values=fv)
  flags.DEFINE_list("targets", list(TARGETS), f"Subset of {','.join(TARGETS)}.", flag_values=fv)
  flags.DEFINE_enum(
    "scale", "paper", ["paper", "smoke"], "Accelerator-scale configs or smoke.", flag_values=fv
  )
  flags.DEFINE_string(
    "config",
    "",
    "FILE.py[:ARG]: check this config (as experiments.main takes it) instead of the methods'.",
    flag_values=fv,
  )
  flags.DEFINE_string(
    "out",
    None,
    "Write OUT.md (the report) and OUT.json (the records). Default: results/accelerator_plan for "
    "the full plan (every method and target, --scale=paper, no --config), nothing for a subset; "
    "--out= writes nothing.",
    flag_values=fv,
  )
  flags.DEFINE_integer(
    "timeout", 3600, "Seconds per target family's worker.", lower_bound=1, flag_values=fv
  )
  flags.DEFINE_string("worker", "", "(internal) compile one target family.", flag_values=fv)
  flags.DEFINE_string("worker_out", "", "(internal) the worker's JSON-lines file.", flag_values=fv)


def main(argv, fv: flags.FlagValues = flags.FLAGS) -> None:
  """Compiles every method × target; prints the table and writes the report."""
  _cli.no_arguments(argv)
  a = _cli.values(fv, NAMES)
  names = [r for r in a["methods"] if r]
  targets = [t for t in a["targets"] if t]
  if a["config"]:
    if not os.path.isfile(a["config"].partition(":")[0]):
      raise app.UsageError(f"--config: no file {a['config'].partition(':')[0]!r}")
    names = [os.path.basename(a["config"].partition(":")[0])[: -len(".py")]]
  elif not names or set(names) - set(METHODS):
    raise app.UsageError(f"--methods must name some of {tuple(METHODS)}; got {a['methods']!r}")
  if not targets or set(targets) - set(TARGETS):
    raise app.UsageError(f"--targets must name some of {tuple(TARGETS)}; got {a['targets']!r}")
  if a["worker"]:
    run_worker(a["worker"], names, targets, a["scale"], a["worker_out"], a["config"])
    return
  records, wall = plan(names, targets, a["scale"], a["timeout"], a["config"])
  command = "python -m benchmarks.accelerator_plan" + "".join(f" {arg}" for arg in sys.argv[1:])
  text = report(records, names, targets, command, _versions(), wall)
  print("\n" + table(records, names, targets))
  out = a["out"]
  if out is None:
    full = not a["config"] and a["scale"] == "paper"
    out = (
      DEFAULT_OUT if full and set(names) == set(METHODS) and set(targets) == set(TARGETS) else ""
    )
  if out:
    _cli.write_results(out, text, {"records": records, "wall_s": wall})
    print(f"wrote {out}.md and {out}.json")


if __name__ == "__main__":
  define_flags()
  _cli.run(main)
