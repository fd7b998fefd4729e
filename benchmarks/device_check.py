r"""One-command device check: each method's training step and both Pallas kernels, in Markdown.

    python -m benchmarks.device_check --methods [--out device_check.md]   # one GPU / TPU host
    python -m benchmarks.device_check --methods --tiny                   # CPU: the test's run

Rows (each in isolation, see below), in this order:

* ``--methods``: for each method (toy, QAM, MinPV, PDNS, DSB, lmKAN, AnyBCQ) one training step at its
  accelerator-scale config (``accelerator_plan.METHODS``, the plan's one-device cell ``h200x1``),
  built as the trainer builds it (``accelerator_plan.build_step``: the ``Method``, the one-device
  mesh, the state donated), compiled (seconds), run on real arrays and timed: the median over 3
  windows of ms per step, the steps of a window dispatched asynchronously and waited for at its
  end, as in a run. Beside it the plan's estimate for that cell (``results/accelerator_plan.json``; a
  range where the step has ``lax.cond``) and the ratio measured / estimate, the compiled per-device
  bytes beside the plan's, and whether the step's watched metrics stayed finite. QAM's offline
  set is the plan's: zeros of the real shapes (1M transitions of puzzle-3x3), so the timing holds
  but the losses mean nothing; host-batch methods get one batch placed on the device once (the
  step alone is timed, as the estimate models it). On a device QAM runs in both loop layouts
  (``qam@scan``: critic_loop=scan, am_forward=scan, the layout the plan compiled;
  ``qam@vmap``: vmap / reuse), the note saying which one ``"auto"`` picks on this backend.
* kernel rows: per production block row of ``bitplane_matmul`` and ``spline_lookup`` on the
  host's backend, each labelled with the kernel that runs (the op's own dispatch):

  - TPU: the Mosaic kernels of ``BLOCK_TABLE["tpu"]`` (bit-plane ``partials`` / ``dequant`` at
    M = 1 / 64 / 512; spline ``portable``, the matrix form);
  - CUDA GPU, Mosaic GPU (the defaults): bit-plane ``lut`` (the lookup-table GEMV, M = 1; Hopper
    and newer) and the ``wgmma`` rows of ``WGMMA_TABLE`` (Hopper) at M = 16 / 64 / 512; spline
    ``mgpu`` (the sparse lookup: 8 FLOPs per (sample, pair, output), compute capability >= 9.0);
  - CUDA GPU, Triton (deprecated backend, explicitly named comparison rows after the defaults):
    ``triton-BUCKET``, the bit-plane rows of ``BLOCK_TABLE["gpu"]`` at the same M and the spline
    gather rows of ``ALTERNATIVE_TABLE["gpu"]``.

  Each: correctness, the kernel (``impl="pallas"``) against the pure-jnp reference
  (``impl="xla"``), max |error| / error scale (bit-plane: max of |x|·|W|; spline: max |y|); then
  timing (median of ``--reps``) of the kernel, the XLA path and the same-shape dense op (bf16
  (M, K)·(K, N); f32 (B, 2P)·(2P, Q)), with the roofline lower bound of the kernel that runs
  (benchmarks/_roofline.py; "—" on the device family it does not run on). The kernels'
  self-check (kernels_pallas/_selfcheck.py) is off in these rows: they measure the kernel itself.

Isolation: the rows run in a worker subprocess, one row at a time, each under its own time limit
(``--row_timeout``, ``--method_timeout``); a row that raises, crashes the worker or runs past its
limit is recorded as such and the next row gets a fresh worker, so a failing or slow row costs
only itself (and one worker start). ``--budget`` caps the whole command: rows not started by then
are listed as skipped. Each row's line is appended to ``--out`` (and printed) as it finishes; the
workers' stderr goes to ``OUT.log``. Budget: about 8 minutes on one H200 including compiles; the
Triton comparison rows come last, so a spent budget skips them first.

On a CPU host (``--tiny``, the test) methods run their ``smoke`` configs and the kernels run in
interpret mode on tiny shapes (XLA at optimisation level 0 in the worker): a code-path check; the
plan's estimates are still the paper-scale H200 cell's, so no ratio is given.
"""

from __future__ import annotations

import functools
import json
import os
import queue
import statistics
import subprocess
import sys
import threading
import time

if __package__ in (None, ""):
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import flags
import jax  # pylint: disable=g-import-not-at-top
import jax.numpy as jnp
import numpy as np

from experiments import _cli
from benchmarks import _roofline
from benchmarks._timing import median_time
from kernels_pallas import _backend
from kernels_pallas.bitplane_matmul import blocks as bblocks
from kernels_pallas.bitplane_matmul import format as fmt
from kernels_pallas.bitplane_matmul import ops as bops
from kernels_pallas.bitplane_matmul import reference as bref
from kernels_pallas.spline_lookup import blocks as sblocks
from kernels_pallas.spline_lookup import ops as sops
from kernels_pallas.spline_lookup.grid import SigmaGrid

METHODS = ("toy", "qam", "minpv", "pdns", "dsb", "lmkan", "anybcq")
# QAM's loop layouts timed on a device (``qam@NAME`` rows); the plan's cell was compiled with
# "scan" (results/accelerator_plan.json as generated in commit 7095283: "QAM's scan layout
# launches 2273 kernels per step on one H200").
QAM_LAYOUTS = {
  "scan": {"critic_loop": "scan", "am_forward": "scan"},
  "vmap": {"critic_loop": "vmap", "am_forward": "reuse"},
}
PLAN_QAM_LAYOUT = "scan"
# Extra overrides of the smoke configs under --tiny (CPU compile time).
TINY_OVERRIDES = {"qam": "agent.flow_steps=2,agent.horizon=2"}
PLAN_JSON = os.path.join(
  os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results", "accelerator_plan.json"
)
PLAN_TARGET = "h200x1"
METHOD_HEADER = (
  "| method | config | data | compile s | step ms | plan est. ms (h200x1) | measured / est. "
  "| compiled MB (plan) | notes |"
)
METHOD_SEP = "|---|---|---|---|---|---|---|---|---|"
KERNEL_SEP = "|---|---|---|---|---|---|---|---|---|"
MARK = "@@device_check "  # the worker's protocol lines on stdout

BUCKET_M = {"decode": 1, "small": 64, "prefill": 512}  # TPU rows (BLOCK_TABLE["tpu"])
# GPU rows: "lut" is the lookup-table GEMV (Hopper and newer, up to LUT_MAX_M rows); the others are
# the wgmma kernel's rows (WGMMA_TABLE, Hopper), each at its largest M ("decode" at 16: up to 5 rows
# go to the LUT kernel). "triton-BUCKET" names the Triton row of BLOCK_TABLE["gpu"] explicitly at
# the same M (Pallas's Triton backend is deprecated: a comparison row, never the default).
GPU_BUCKET_M = {"lut": 1, "decode": 16, "small": 64, "prefill": 512}
TRITON = "triton-"
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


def _roof(nbytes, flops, vector_ops=0.0, devices=tuple(_roofline.PEAKS)):
  """The roofline estimate per device of ``_roofline.PEAKS``, "—" for a device the kernel does
  not run on (``devices``: those it does)."""
  return " / ".join(
    f"{_roofline.implied_seconds(nbytes, flops, d, vector_ops)[0] * 1e6:.2f}"
    if d in devices
    else "—"
    for d in _roofline.PEAKS
  )


GPU_DEVICES, TPU_DEVICES = ("H200",), ("TPU v5e",)


def _bitplane_kernel(kplat: str, bucket: str, tiny: bool):
  """``(M, config or None)`` of a bit-plane row: None lets the op's own dispatch pick the kernel
  (the production path); a Triton row names its ``BLOCK_TABLE["gpu"]`` config."""
  if kplat == "tpu":
    if bucket not in BUCKET_M:
      raise ValueError(f"bit-plane row {bucket!r}: TPU rows are {tuple(BUCKET_M)}")
    m, cfg = BUCKET_M[bucket], None
  else:
    base = bucket[len(TRITON) :] if bucket.startswith(TRITON) else bucket
    if base not in GPU_BUCKET_M or (base == "lut" and base != bucket):
      raise ValueError(
        f"bit-plane row {bucket!r}: GPU rows are {tuple(GPU_BUCKET_M)} and "
        f"{TRITON}{{{','.join(r.bucket for r in bblocks.BLOCK_TABLE['gpu'])}}}"
      )
    m = GPU_BUCKET_M[base]
    cfg = bblocks.table_row("gpu", m).config if base != bucket else None
  return (min(m, 16) if tiny else m), cfg


def bitplane_rows(kplat, interpret, tiny, buckets, reps, warmup):
  out = []
  k = n = 256 if tiny else 4096
  g = 128
  planes, alpha, beta, _ = fmt.random_bitplane_layer(
    0, k, n, num_planes=4, precisions=PRECISIONS, group_size=g, asymmetric=True, dtype=jnp.float16
  )
  rng = np.random.default_rng(1)
  w_dense = jnp.asarray(rng.standard_normal((k, n)) * 0.02, jnp.bfloat16)
  dense = jax.jit(lambda x, w: jnp.dot(x, w, preferred_element_type=jnp.float32))
  op = functools.partial(
    bops.bitplane_matmul, impl="pallas", platform=kplat, interpret=interpret, out_dtype=jnp.float32
  )
  xla = jax.jit(functools.partial(bops.bitplane_matmul, impl="xla", out_dtype=jnp.float32))
  for bucket in buckets:
    m, cfg = _bitplane_kernel(kplat, bucket, tiny)
    kern = jax.jit(functools.partial(op, config=cfg))
    x = jnp.asarray(rng.standard_normal((m, k)), jnp.bfloat16)
    # What runs, as the op decides it: on GPU the Mosaic GPU kernel of `gpu_config` ("lut",
    # "wgmma"), or the Triton kernel when the row names it; on TPU the table row's variant.
    if kplat == "gpu":
      layout = fmt.check_operands(x, planes, alpha, beta)
      run = bops.gpu_config(m, layout, cfg, interpret, x.dtype)
      if run is None and cfg is None:
        raise ValueError(f"bit-plane row {bucket!r}: no Mosaic GPU kernel serves M = {m} here")
      if run is None:  # the Triton kernel, clamped as the op clamps it
        run = bblocks.pick_config("gpu", m, k, n, g, 2, base=cfg)
        variant = f"triton {run.variant}"
      else:
        variant = run.variant
    else:
      run = bblocks.pick_config("tpu", m, k, n, g, 2)
      variant = run.variant
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
      if variant == "lut":  # counted SASS per unit (`_roofline.LUT_SASS`)
        roof = _roof(
          _roofline.bitplane_lut_bytes(m, k, n, p, g),
          0.0,
          {"H200": _roofline.bitplane_lut_unit_ops(m, k, n, p)},
          GPU_DEVICES,
        )
      elif variant == "wgmma":  # counted SASS per unit (`_roofline.WGMMA_SASS_LOOP`)
        m_pad = -(-m // run.bm) * run.bm
        roof = _roof(
          _roofline.bitplane_wgmma_bytes(m, k, n, p, g, run.bm, run.split_k),
          _roofline.bitplane_flops(m_pad, k, n, p, "wgmma"),
          _roofline.bitplane_vector_ops(m, k, n, p, "wgmma", run.bm),
          GPU_DEVICES,
        )
      else:  # the TPU kernel, or the Triton kernel (unpack counted in PTX, `mma_loop_instr`)
        nbytes = p * k * n // 8 + (p + 1) * (k // g) * n * 2 + m * k * 2 + m * n * 4
        roof = _roof(
          nbytes,
          _roofline.bitplane_flops(m, k, n, p, run.variant),
          _roofline.bitplane_vector_ops(m, k, n, p, run.variant, run.bm),
          GPU_DEVICES if kplat == "gpu" else TPU_DEVICES,
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


def _spline_kernel(kplat: str, bucket: str):
  """``(G, block_sizes or None)`` of a spline row: None takes the table's production row (GPU: the
  Mosaic GPU kernels; TPU: the matrix form); "triton-BUCKET" names the Triton gather row of
  ``ALTERNATIVE_TABLE["gpu"]`` (GPU only)."""
  base = bucket[len(TRITON) :] if bucket.startswith(TRITON) else bucket
  if base not in BUCKET_G or (base != bucket and kplat != "gpu"):
    raise ValueError(
      f"spline row {bucket!r}: rows are {tuple(BUCKET_G)} (and {TRITON}BUCKET on GPU)"
    )
  G = BUCKET_G[base]
  return G, (sblocks.table_row("gpu", G, variant="gather").config if base != bucket else None)


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
    G, block_sizes = _spline_kernel(kplat, bucket)
    grid = SigmaGrid(G)
    table = jnp.asarray(rng.uniform(-0.1, 0.1, (pairs, G + 1, G + 1, q)), jnp.float32)
    kern = jax.jit(
      functools.partial(
        sops.spline_lookup,
        grid=grid,
        impl="pallas",
        platform=kplat,
        interpret=interpret,
        block_sizes=block_sizes,
      )
    )
    xla = jax.jit(functools.partial(sops.spline_lookup, grid=grid, impl="xla"))
    y, y_ref = kern(xp, table), xla(xp, table)
    err = float(jnp.max(jnp.abs(y - y_ref)) / jnp.max(jnp.abs(y_ref)))
    t_k = median_time(kern, xp, table, warmup=warmup, reps=reps)
    t_x = median_time(xla, xp, table, warmup=warmup, reps=reps)
    t_d = median_time(dense, x2, w, warmup=warmup, reps=reps)
    # The variant the op runs: the explicit row's, else the table's production row.
    variant = (block_sizes or sblocks.table_row(kplat, G).config).variant
    c_pad = sblocks.corner_pad(G)
    nbytes = _roofline.spline_bytes(b, pairs, q, G)
    if kplat == "gpu":
      # The sparse lookup: 8 FLOPs per (sample, pair, output), as FP32 fused multiply-adds on the
      # CUDA cores (no matrix-unit FLOPs); the table read once (a floor: it is re-read per block
      # through L1 / L2). Mosaic GPU: the compiled loop's SASS per unit
      # (`_roofline.SPLINE_MGPU_FWD_SASS`); Triton gather: only its FMAs are counted.
      if variant == "mgpu":
        ops = _roofline.spline_mgpu_forward_unit_ops(b, pairs, q)
        label = "mgpu"
      else:
        ops = {"fp32": _roofline.spline_gather_flops(b, pairs, q) // 2}
        label = f"triton {variant}"
      roof = _roof(nbytes, 0.0, {"H200": ops}, GPU_DEVICES)
    else:  # per-unit counts (`_roofline.spline_tpu_forward_times`), the table per B-block
      label = variant
      bb = sblocks.plan("tpu", G, b, pairs, q, block_sizes).config.fwd_bb
      if variant == "gather":  # the lane permutes bound it, not the FLOPs
        flops = _roofline.spline_gather_flops(b, pairs, q)
        nbytes = _roofline.spline_tpu_gather_bytes(b, pairs, q, G, c_pad, bb)
        vector_ops = {"TPU v5e": _roofline.spline_tpu_gather_unit_ops(b, pairs, q, c_pad)}
      else:  # the MXU passes (bf16x3 dots), the matrix build on the VALU
        flops = _roofline.spline_matrix_flops(b, pairs, q, c_pad, passes=3)
        nbytes = _roofline.spline_tpu_matrix_bytes(b, pairs, q, G, c_pad, bb)
        build = _roofline.SPLINE_TPU_MATRIX_BUILD_OPS * b * pairs * c_pad
        vector_ops = {"TPU v5e": {"valu": build}}
      roof = _roof(nbytes, flops, vector_ops, TPU_DEVICES)
    out.append(
      dict(
        op="spline_lookup",
        row=f"{bucket} ({label}) G={G}",
        shape=f"B={b} {n_in}->{q}",
        err=err,
        kernel=t_k,
        xla=t_x,
        dense=t_d,
        roof=roof,
      )
    )
  return out


# ------------------------------------------------------------------------------------------------
# Training-step rows (worker side).


def _plan_records(path: str = PLAN_JSON) -> list[dict]:
  try:
    with open(path) as f:
      return json.load(f)["records"]
  except (OSError, ValueError, KeyError):
    return []


def plan_estimate(name: str, arg: str, layout: str = "", records=None) -> dict | None:
  """The accelerator plan's ``h200x1`` record of method ``name`` at its accelerator-scale ``arg``
  (None: no such cell, or a QAM layout other than the one the plan compiled)."""
  if name == "qam" and layout and layout != PLAN_QAM_LAYOUT:
    return None
  for r in _plan_records() if records is None else records:
    if r.get("method") == name and r.get("target") == PLAN_TARGET and r.get("arg", "") == arg:
      return None if "error" in r else r
  return None


def _qam_layout(config) -> str:
  """The loop layout the QAM agent runs with here (``"auto"`` resolved for this backend)."""
  agent = config.agent
  fields = {k: str(agent.get(k, "?")) for k in ("critic_loop", "am_forward")}
  if "auto" in fields.values():
    try:
      from iclr26_jax.qam import config as qam_config

      resolved = qam_config.resolve_layout(agent, jax.default_backend())
      fields = {k: str(resolved[k]) for k in fields}
      auto = True
    except (ImportError, AttributeError, KeyError, TypeError, ValueError):
      auto = False
  else:
    auto = False
  return f"{'auto → ' if auto else ''}critic_loop={fields['critic_loop']}, am_forward={fields['am_forward']}"


def method_row(name: str, *, tiny: bool, min_time: float = 0.5) -> dict:
  """Compiles and times one method's training step (``name``: a method or ``qam@LAYOUT``).

  Returns:
    a dict with the table cells' values: compile and step seconds, the plan's estimate, compiled
    bytes, notes.
  """
  from benchmarks import accelerator_plan as ap

  base, _, layout = name.partition("@")
  if base not in ap.METHODS or (layout and (base != "qam" or layout not in QAM_LAYOUTS)):
    raise ValueError(
      f"method row {name!r}: not one of {METHODS} or qam@{{{','.join(QAM_LAYOUTS)}}}"
    )
  _, paper_arg, smoke_arg, _ = ap.METHODS[base]
  parts = [smoke_arg if tiny else paper_arg, TINY_OVERRIDES.get(base, "") if tiny else ""]
  if layout:
    parts += [f"agent.{k}={v}" for k, v in QAM_LAYOUTS[layout].items()]
  arg = ",".join(p for p in parts if p)
  config = ap.load_config(base, arg)
  method = ap.make_method(base, config, "smoke" if tiny else "paper")
  fn, specs, path = ap.build_step(method, config, jax.devices()[:1])
  t0 = time.perf_counter()
  compiled = fn.trace(*specs).lower().compile()
  compile_s = time.perf_counter() - t0
  in_sh = compiled.input_shardings[0]
  # As the trainer does: the state built by a jitted init (distinct buffers: the donated state
  # may hold one array in two leaves, e.g. a target network initialised to the online one).
  state = jax.jit(method.init_state, out_shardings=in_sh[0])(jax.random.PRNGKey(int(config.seed)))
  data = method.device_data() if path == "device data" else method.get_batch(0)
  data, first_bad = jax.device_put((data, jnp.array(-1, jnp.int32)), (in_sh[1], in_sh[2]))
  t0 = time.perf_counter()
  state, _, first_bad = compiled(state, data, first_bad)
  jax.block_until_ready(state)
  first_s = time.perf_counter() - t0
  state, _, first_bad = compiled(state, data, first_bad)  # a second warm-up step
  jax.block_until_ready(state)
  n = 1 if tiny else int(min(200, max(3, min_time / max(first_s, 1e-6))))
  windows = []
  for _ in range(1 if tiny else 3):
    t0 = time.perf_counter()
    for _ in range(n):
      state, _, first_bad = compiled(state, data, first_bad)
    jax.block_until_ready(state)
    windows.append((time.perf_counter() - t0) / n)
  bad = int(jax.device_get(first_bad))
  mem = compiled.memory_analysis()
  total = None
  if mem is not None:
    total = (
      mem.argument_size_in_bytes
      + mem.output_size_in_bytes
      - mem.alias_size_in_bytes
      + mem.temp_size_in_bytes
    )
  peak = None
  try:
    peak = (jax.devices()[0].memory_stats() or {}).get("peak_bytes_in_use")
  except Exception:  # noqa: BLE001 - not every backend reports it
    pass
  notes = [
    f"{int(config.num_steps)} steps/run",
    "finite" if bad < 0 else f"non-finite at step {bad}",
  ]
  if base == "qam":
    notes.append(_qam_layout(config))
    if not tiny:
      notes.append("offline set: zeros of the real shapes")
  if peak:
    notes.append(f"peak in use {peak / 1e6:.0f} MB")
  est = plan_estimate(base, paper_arg, layout)
  return dict(
    section="methods",
    row=name,
    config=f"{ap.METHODS[base][0]}{':' + arg if arg else ''}",
    path=path,
    compile_s=compile_s,
    step_s=statistics.median(windows),
    first_s=first_s,
    steps_timed=n * len(windows),
    est_s=None if est is None else est["est_step_s"],
    est_lo_s=None if est is None else est.get("est_step_lo_s", est["est_step_s"]),
    bytes=total,
    plan_bytes=None if est is None else est.get("total"),
    notes=notes,
  )


def _ms(s) -> str:
  return "n/a" if s is None else f"{s * 1e3:.3g}"


def method_line(r: dict, *, ratio: bool) -> str:
  """One Markdown row of the training-step table (``ratio``: the device is the plan's cell's,
  H200)."""
  if "error" in r:
    return f"| {r['row']} | {r.get('config', '')} | | | **{r['error']}** | | | | |"
  est, lo = r["est_s"], r["est_lo_s"]
  if est is None:
    est_txt, ratio_txt = "n/a (no plan cell)", "n/a"
  else:
    est_txt = _ms(est) if lo >= 0.95 * est else f"{_ms(lo)} – {_ms(est)}"
    if not ratio:
      ratio_txt = "n/a (not an H200 at paper scale)"
    elif lo >= 0.95 * est:
      ratio_txt = f"{r['step_s'] / est:.2f}"
    else:
      ratio_txt = f"{r['step_s'] / est:.2f} – {r['step_s'] / lo:.2f}"
  mb = "n/a" if r["bytes"] is None else f"{r['bytes'] / 1e6:.4g}"
  if r.get("plan_bytes"):
    mb += f" ({r['plan_bytes'] / 1e6:.4g})"
  notes = "; ".join(r["notes"] + r.get("warnings", [])).replace("|", "\\|")
  return (
    f"| {r['row']} | `{r['config']}` | {r['path']} | {r['compile_s']:.1f} | {_ms(r['step_s'])} "
    f"| {est_txt} | {ratio_txt} | {mb} | {notes} |"
  )


def kernel_line(r: dict, *, interpret: bool) -> str:
  """One Markdown row of the kernels table."""
  if "error" in r:
    return f"| {r['op']} | {r['row']} | | **{r['error']}** | | | | | |"
  ratio = f"{r['kernel'] / r['dense']:.2f}" if not interpret else "n/a"
  return (
    f"| {r['op']} | {r['row']} | {r['shape']} | {r['err']:.2e} | {_us(r['kernel'])} "
    f"| {_us(r['xla'])} | {_us(r['dense'])} | {ratio} | {r['roof']} |"
  )


# ------------------------------------------------------------------------------------------------
# The worker: runs rows one at a time, one protocol line per event on stdout.


def _emit(msg: dict) -> None:
  sys.stdout.write(MARK + json.dumps(msg, default=str) + "\n")
  sys.stdout.flush()


def _platforms():
  plat = _platform()
  interpret = plat == "cpu"
  return plat, interpret, ("tpu" if plat == "cpu" else plat)


def run_row(name: str, *, tiny: bool, reps: int) -> list[dict]:
  """One row of either kind (``method:NAME``, ``bitplane:BUCKET``, ``spline:BUCKET``)."""
  import warnings

  kind, _, what = name.partition(":")
  plat, interpret, kplat = _platforms()
  warmup = 1 if tiny else 2
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    if kind == "method":
      out = [method_row(what, tiny=tiny)]
    elif kind in ("bitplane", "spline"):
      os.environ["ICLR26_KERNEL_SELFCHECK"] = "off"  # these rows measure the kernel itself
      try:
        rows = bitplane_rows if kind == "bitplane" else spline_rows
        out = [
          dict(r, section="kernels") for r in rows(kplat, interpret, tiny, [what], reps, warmup)
        ]
      finally:
        os.environ.pop("ICLR26_KERNEL_SELFCHECK", None)
    elif kind == "_hang":  # internal (isolation test): never finishes; its limit is `what` s
      time.sleep(3600)
    elif kind == "_crash":  # internal (isolation test): the worker dies mid-row
      os._exit(3)
    else:
      raise ValueError(f"row {name!r}: kind must be method, bitplane or spline")
  selfcheck = [str(w.message).split(";")[0] for w in caught if "SelfCheck" in w.category.__name__]
  for r in out:
    r["warnings"] = ["self-check: " + m for m in selfcheck]
  return out


def worker(rows: list[str] | None, *, tiny: bool, reps: int, methods: bool, kernels: bool) -> None:
  """Runs ``rows`` in order (None: ``default_rows`` for this device, announced in the "ready"
  line); exits after the first row that raises (the next gets a fresh process: a device error can
  leave this one's runtime unusable)."""
  plat, interpret, kplat = _platforms()
  dev = jax.devices()[0]
  gpu = dict(lut=False, wgmma=False, mgpu=False, triton=False)
  if plat == "gpu":
    cap = _backend.gpu_capability()
    gpu = dict(
      lut=bblocks.lut_eligible(1, 4096, cap),
      wgmma=cap is not None and bblocks.wgmma_capable(cap),
      mgpu=sops.mgpu_capable(),
      triton=_backend.triton_capable(),
    )
  if rows is None:
    rows = default_rows(methods=methods, kernels=kernels, tiny=tiny, platform=plat, **gpu)
  _emit(
    dict(
      event="ready",
      device=dev.device_kind,
      platform=plat,
      kplat=kplat,
      interpret=interpret,
      jax=jax.__version__,
      rows=rows,
    )
  )
  for name in rows:
    _emit(dict(event="start", row=name))
    t0 = time.perf_counter()
    try:
      out = run_row(name, tiny=tiny, reps=reps)
    except Exception as e:  # noqa: BLE001 - reported as the row's result
      import traceback

      traceback.print_exc()
      lines = str(e).strip().splitlines()
      _emit(
        dict(event="done", row=name, error=f"{type(e).__name__}: {lines[0][:200] if lines else ''}")
      )
      return
    _emit(dict(event="done", row=name, results=out, seconds=time.perf_counter() - t0))
    jax.clear_caches()


# ------------------------------------------------------------------------------------------------
# The orchestrator (no device touched in this process: the workers own the accelerator).


def default_rows(
  *,
  methods: bool,
  kernels: bool,
  tiny: bool,
  platform: str,
  lut: bool = False,
  wgmma: bool = False,
  mgpu: bool = False,
  triton: bool = False,
) -> list[str]:
  """The row names of a full check on a ``platform`` ("cpu", "gpu", "tpu") device. On a GPU the
  flags say which kernels it runs: ``lut`` the lookup-table bit-plane GEMV (Hopper and newer),
  ``wgmma`` the bit-plane wgmma kernel (Hopper), ``mgpu`` the Mosaic GPU spline kernels (compute
  capability >= 9.0), ``triton`` Pallas's Triton backend (>= 8.0). The production rows come
  first, then the Triton rows (``triton-BUCKET``), comparisons named explicitly, so that a spent
  ``--budget`` skips those."""
  out = []
  if methods:
    for name in METHODS:
      if name == "qam" and not tiny:
        out += [f"method:qam@{k}" for k in QAM_LAYOUTS]
      else:
        out.append(f"method:{name}")
  if not kernels:
    return out
  if platform != "gpu":
    kplat = "tpu"
    out += [f"bitplane:{r.bucket}" for r in bblocks.BLOCK_TABLE[kplat]]
    out += [f"spline:{r.bucket}" for r in sblocks.BLOCK_TABLE[kplat]]
    return out
  out += ["bitplane:lut"] if lut else []
  out += [f"bitplane:{r.bucket}" for r in bblocks.WGMMA_TABLE] if wgmma else []
  out += [f"spline:{r.bucket}" for r in sblocks.BLOCK_TABLE["gpu"]] if mgpu else []
  if triton:
    out += [f"bitplane:{TRITON}{r.bucket}" for r in bblocks.BLOCK_TABLE["gpu"]]
    out += [f"spline:{TRITON}{r.bucket}" for r in sblocks.ALTERNATIVE_TABLE["gpu"]]
  return out


class _Worker:
  """One worker subprocess and a reader thread feeding its protocol lines into a queue."""

  def __init__(self, rows, *, tiny, reps, log, methods, kernels):
    cmd = [sys.executable, "-m", "benchmarks.device_check", "--worker", f"--reps={reps}"]
    cmd += ["--tiny"] if tiny else []
    if rows is None:  # the worker picks the device's default rows
      cmd += ["--methods" if methods else "--nomethods", "--kernels" if kernels else "--nokernels"]
    else:
      cmd += [f"--worker_rows={','.join(rows)}"]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if tiny:
      env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0").strip()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    self.proc = subprocess.Popen(
      cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1
    )
    self.q: queue.Queue = queue.Queue()
    threading.Thread(target=self._read, daemon=True).start()

  def _read(self):
    for line in self.proc.stdout:
      if line.startswith(MARK):
        try:
          self.q.put(json.loads(line[len(MARK) :]))
        except ValueError:
          pass
    self.q.put(None)  # EOF

  def get(self, timeout):
    return self.q.get(timeout=max(timeout, 0.01))

  def stop(self):
    if self.proc.poll() is None:
      self.proc.kill()
    self.proc.wait()


class Table:
  """The Markdown report, appended to ``path`` (and printed) row by row."""

  def __init__(self, path: str | None, echo: bool = True):
    self.path, self.echo, self.lines, self.sections = path, echo, [], set()
    if path:
      os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
      open(path, "w").close()

  def add(self, *lines: str) -> None:
    for line in lines:
      self.lines.append(line)
      if self.echo:
        print(line, flush=True)
    if self.path:
      with open(self.path, "a") as f:
        f.write("".join(line + "\n" for line in lines))

  def section(self, name: str, info: dict) -> None:
    if name in self.sections:
      return
    self.sections.add(name)
    if name == "methods":
      self.add(
        "",
        "Training steps (one device; `accelerator_plan` builds them as the trainer does):",
        "",
        METHOD_HEADER,
        METHOD_SEP,
      )
    else:
      mode = ", interpret mode: times are not timings" if info.get("interpret") else ""
      self.add(
        "",
        f"Kernels ({info.get('kplat', '?')} kernels{mode}; correctness vs the jnp reference, "
        "then timing):",
        "",
        HEADER,
        KERNEL_SEP,
      )


def run(
  rows: list[str] | None = None,
  *,
  methods: bool = False,
  kernels: bool = True,
  tiny: bool = False,
  out: str | None = None,
  reps: int = 10,
  row_timeout: float = 150.0,
  method_timeout: float = 120.0,
  budget: float = 480.0,
  echo: bool = True,
) -> tuple[list[str], list[dict]]:
  """Runs the rows in worker subprocesses and writes the table as they finish.

  Args:
    rows: row names (``method:NAME``, ``method:qam@LAYOUT``, ``bitplane:BUCKET``,
      ``spline:BUCKET``); None: ``default_rows`` for the device the first worker reports.
    methods, kernels: which row kinds ``rows=None`` includes.
    tiny: CPU code-path check (smoke configs, tiny kernel shapes, interpret mode).
    out: the Markdown file (appended row by row); its ``.log`` sibling takes the workers' stderr.
    reps: timed repetitions per kernel row.
    row_timeout, method_timeout: seconds a kernel / training-step row may take (compile included).
    budget: seconds for the whole command; rows not started by then are skipped.
  Returns:
    (the Markdown lines, every row's result dict; failed rows carry ``error``).
  """
  t_start = time.perf_counter()
  table = Table(out, echo)
  log_path = (os.path.splitext(out)[0] + ".log") if out else os.devnull
  log = open(log_path, "w")
  results: list[dict] = []
  info: dict = {}
  pending = list(rows) if rows is not None else None
  started_title = False
  try:
    while pending is None or pending:
      left = budget - (time.perf_counter() - t_start)
      if left <= 0:
        for name in pending or []:
          results.append(_failed(name, f"skipped: the {budget:.0f} s budget was spent"))
          _write(table, results[-1], info, tiny)
        break
      w = _Worker(pending, tiny=tiny, reps=reps, log=log, methods=methods, kernels=kernels)
      current, deadline = None, time.perf_counter() + min(left, 180.0)  # start-up
      while True:
        try:
          msg = w.get(deadline - time.perf_counter())
        except queue.Empty:
          w.stop()
          if current is None:  # never became ready
            name = pending[0] if pending else "worker start"
            results.append(_failed(name, "worker start timed out"))
          else:
            lim = _limit(current, method_timeout, row_timeout)
            results.append(_failed(current, f"timed out after {min(lim, left):.0f} s"))
          name = results[-1]["row"]
          _write(table, results[-1], info, tiny)
          if pending:
            pending = [p for p in pending if p != name]
          break
        if msg is None:  # the worker exited
          rc = w.proc.wait()
          if current is not None:
            results.append(_failed(current, f"worker died (exit {rc}); see {log_path}"))
            _write(table, results[-1], info, tiny)
            pending = [p for p in pending if p != current]
          elif pending and not info:
            results.append(
              _failed(pending[0], f"worker exited {rc} before starting; see {log_path}")
            )
            _write(table, results[-1], info, tiny)
            pending = pending[1:]
          break
        ev = msg["event"]
        if ev == "ready":
          info = msg
          if not started_title:
            started_title = True
            table.add(
              f"Device check on {msg['device']} ({msg['platform']}; jax {msg['jax']}"
              f"{'; --tiny: CPU code-path check, not timings' if tiny else ''}).",
            )
          if pending is None:  # the worker chose the device's default rows
            pending = list(msg["rows"])
          if not pending:
            break
          deadline = time.perf_counter() + left
        elif ev == "start":
          current = msg["row"]
          lim = _limit(current, method_timeout, row_timeout)
          left = budget - (time.perf_counter() - t_start)
          deadline = time.perf_counter() + min(lim, left)
        elif ev == "done":
          name = msg["row"]
          if "error" in msg:
            results.append(_failed(name, msg["error"]))
            _write(table, results[-1], info, tiny)
          else:
            for r in msg["results"]:
              results.append(r)
              _write(table, r, info, tiny)
          pending = [p for p in pending if p != name]
          current = None
          if not pending:
            break
      w.stop()
  finally:
    log.close()
  return table.lines, results


def _limit(name: str, method_timeout: float, row_timeout: float) -> float:
  if name.startswith("_hang:"):
    return float(name.partition(":")[2])
  return method_timeout if name.startswith("method:") else row_timeout


def _failed(name: str, error: str) -> dict:
  kind, _, what = name.partition(":")
  if kind in ("method", "_hang", "_crash"):
    return dict(section="methods", row=what if kind == "method" else name, error=error)
  op = {"bitplane": "bitplane_matmul", "spline": "spline_lookup"}.get(kind, kind)
  return dict(section="kernels", op=op, row=what, error=error)


def _write(table: Table, r: dict, info: dict, tiny: bool) -> None:
  table.section(r["section"], info)
  if r["section"] == "methods":
    h200 = "H200" in str(info.get("device", "")) and info.get("platform") == "gpu"
    table.add(method_line(r, ratio=h200 and not tiny))
  else:
    table.add(kernel_line(r, interpret=bool(info.get("interpret"))))


NAMES = (
  "out",
  "tiny",
  "methods",
  "kernels",
  "bitplane_rows",
  "spline_rows",
  "method_rows",
  "reps",
  "row_timeout",
  "method_timeout",
  "budget",
  "worker",
  "worker_rows",
)


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
  """Defines this tool's flags in ``fv`` (called only when the file is the program)."""
  flags.DEFINE_string(
    "out",
    "",
    "The Markdown table's path (default: $OUT/device_check.md when OUT is set, else "
    "device_check.md).",
    flag_values=fv,
  )
  flags.DEFINE_boolean("tiny", False, "Tiny shapes (CPU interpret-mode check).", flag_values=fv)
  flags.DEFINE_boolean("methods", False, "Also time every method's training step.", flag_values=fv)
  flags.DEFINE_boolean("kernels", True, "The kernel block rows.", flag_values=fv)
  flags.DEFINE_list(
    "bitplane_rows",
    [],
    "Bit-plane rows to run (default: all of this device's; TPU: decode, small, prefill; GPU: lut, "
    "decode, small, prefill and the Triton rows triton-decode, triton-small, triton-prefill).",
    flag_values=fv,
  )
  flags.DEFINE_list(
    "spline_rows",
    [],
    "Spline rows to run (default: all of this device's; small, medium, large, huge; GPU also "
    "triton-BUCKET, the Triton gather rows).",
    flag_values=fv,
  )
  flags.DEFINE_list(
    "method_rows",
    [],
    f"Methods to run (default with --methods: all; of {METHODS}, qam@scan, qam@vmap).",
    flag_values=fv,
  )
  flags.DEFINE_integer(
    "reps", 10, "Timed repetitions per kernel row.", lower_bound=1, flag_values=fv
  )
  flags.DEFINE_float("row_timeout", 150.0, "Seconds per kernel row.", lower_bound=1, flag_values=fv)
  flags.DEFINE_float(
    "method_timeout", 120.0, "Seconds per training-step row.", lower_bound=1, flag_values=fv
  )
  flags.DEFINE_float(
    "budget", 480.0, "Seconds for the whole command.", lower_bound=1, flag_values=fv
  )
  flags.DEFINE_boolean("worker", False, "(internal) run rows in this process.", flag_values=fv)
  flags.DEFINE_list("worker_rows", [], "(internal) the worker's rows.", flag_values=fv)


def main(argv, fv: flags.FlagValues = flags.FLAGS) -> None:
  """Runs the rows (each in a worker subprocess), printing the table and writing ``--out``."""
  _cli.no_arguments(argv)
  a = _cli.values(fv, NAMES)
  if a["worker"]:
    rows = [r for r in a["worker_rows"] if r] or None
    worker(rows, tiny=a["tiny"], reps=a["reps"], methods=a["methods"], kernels=a["kernels"])
    return
  pick = {
    "method": [v for v in a["method_rows"] if v],
    "bitplane": [v for v in a["bitplane_rows"] if v],
    "spline": [v for v in a["spline_rows"] if v],
  }
  rows = None
  if any(pick.values()):
    rows = [f"{kind}:{v}" for kind, vs in pick.items() for v in vs]
  run(
    rows,
    methods=a["methods"],
    kernels=a["kernels"],
    tiny=a["tiny"],
    out=a["out"] or os.path.join(os.environ.get("OUT") or ".", "device_check.md"),
    reps=a["reps"],
    row_timeout=a["row_timeout"],
    method_timeout=a["method_timeout"],
    budget=a["budget"],
  )


if __name__ == "__main__":
  define_flags()
  _cli.run(main)
