"""Compile tier: every production block row of both kernels compiled for real TPU and GPU targets.

Cross-lowering (test_*_lowering.py) stops before the backend compilers; here libtpu (the
``[compile]`` extra) compiles the kernels ahead of time for TPU v5e and v6e from
``jax.experimental.topologies`` devices, on the CPU host: Mosaic's layout passes, VMEM allocation and
code generation run, which is where e.g. float16 scale loads failed ("Invalid vector type for
load"). Skipped, with the reason, when libtpu is not installed. The GPU half (below) compiles the
Triton kernels to sm_90a with the triton wheel (both wheels come with the ``[compile]`` extra) and
the Mosaic GPU kernels for a compile-only H200 (the compile venv's CUDA plugin).

Cost is compile time, so shapes are the smallest that keep each table row unclamped
(``blocks.pick_config`` / ``blocks.plan`` return the row itself, asserted below):
* bit-plane: M = 1 / 64 / 512 (decode / small / prefill rows), K = N = 1024, g = 128, 4 planes,
  precisions (2, 3, 4); forward with f32, bf16 and f16 scales (f16 is the released checkpoints'
  dtype), plus the mixed-precision variant. The backward is the pure-jnp ``custom_vjp`` rule (no
  kernel, independent of the block row) and is compiled once per target at K = N = 256. GPU: the
  Hopper wgmma rows (the default) at M = 16 / 64 / 512, the LUT row at M = 1, the explicit Triton
  rows as above;
* spline: B = 512, Q = 512 and P = 8 (2 for the rows whose pair block is smaller), one function
  holding the forward and the VJP (forward, dT and dx kernels) per row and grid size bucket: the
  TPU rows are the matrix-form (portable) kernels; the lane-gather alternative (variant="gather")
  is compiled for v5e at G = 8 and 12 with its Mosaic-module checks below.
"""

import contextlib
import functools

import jax
import jax.numpy as jnp
import pytest

from benchmarks import _targets
from kernels_pallas.bitplane_matmul import blocks as bblocks
from kernels_pallas.bitplane_matmul import format as fmt
from kernels_pallas.bitplane_matmul import ops as bops
from kernels_pallas.bitplane_matmul import reference as bref
from kernels_pallas.spline_lookup import blocks as sblocks
from kernels_pallas.spline_lookup import ops as sops
from kernels_pallas.spline_lookup.grid import SigmaGrid

# Every compile is independent (no module fixtures): spread them over both xdist workers.
pytestmark = pytest.mark.split_params

_OK, _WHY = _targets.libtpu_available()
needs_libtpu = pytest.mark.skipif(not _OK, reason=_WHY)

TARGETS = ("v5e", "v6e")
SDS = jax.ShapeDtypeStruct
PRECISIONS = (2, 3, 4)
K = N = 1024
G_BITS = 128
BUCKET_M = {"decode": 1, "small": 64, "prefill": 512}
BUCKET_G = {"small": 8, "medium": 14, "large": 26, "huge": 40}
SCALE_DTYPES = {"f32": jnp.float32, "bf16": jnp.bfloat16, "f16": jnp.float16}


def _bitplane_specs(m, k, n, s_dtype, *, mixed=False, x_dtype=jnp.bfloat16, g=G_BITS):
  return (
    SDS((m, k), x_dtype),
    SDS((4, k // 32, n), jnp.uint32),
    SDS((sum(PRECISIONS), k // g, n), s_dtype),
    SDS((len(PRECISIONS), k // g, n), s_dtype),
    SDS((m,) if mixed else (), jnp.int32),
  )


BITPLANE_ROWS = [
  pytest.param(bucket, cfg, sname, id=f"{bucket}-scales_{sname}")
  for plat, bucket, cfg in bblocks.production_configs()
  if plat == "tpu"
  for sname in SCALE_DTYPES
]


@needs_libtpu
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("bucket,config,scales", BITPLANE_ROWS)
def test_bitplane_forward_compiles(target, bucket, config, scales):
  m = BUCKET_M[bucket]
  picked = bblocks.pick_config("tpu", m, K, N, G_BITS, 2)
  assert (picked.variant, picked.bn, picked.bk) == (config.variant, config.bn, config.bk)
  op = functools.partial(bops.bitplane_matmul, impl="pallas", platform="tpu")
  compiled = _targets.compile_for_tpu(op, _bitplane_specs(m, K, N, SCALE_DTYPES[scales]), target)
  assert "tpu_custom_call" in compiled.as_text()


@needs_libtpu
@pytest.mark.parametrize("target", TARGETS)
def test_bitplane_mixed_precision_and_backward_compile(target):
  """The mixed-precision variant (decode row, f16 scales) and the custom_vjp backward."""
  op = functools.partial(bops.bitplane_matmul, impl="pallas", platform="tpu")
  _targets.compile_for_tpu(op, _bitplane_specs(1, K, N, jnp.float16, mixed=True), target)

  def bwd(x, planes, alpha, beta, p, dy):
    layout = fmt.check_operands(x, planes, alpha, beta)
    return bref.bitplane_matmul_backward(x, planes, alpha, beta, p, dy, layout=layout)

  specs = _bitplane_specs(16, 256, 256, jnp.float16) + (SDS((16, 256), jnp.bfloat16),)
  _targets.compile_for_tpu(bwd, specs, target)


SPLINE_ROWS = [
  pytest.param(bucket, cfg, id=bucket)
  for plat, bucket, cfg in sblocks.production_configs()
  if plat == "tpu"
]


@needs_libtpu
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("bucket,config", SPLINE_ROWS)
def test_spline_forward_and_backward_compile(target, bucket, config):
  G = BUCKET_G[bucket]
  b, p, q = max(config.fwd_bb, config.dt_bb, config.dx_bb), max(config.fwd_bp, 2), 512
  assert sblocks.plan("tpu", G, b, p, q).config == config
  op = functools.partial(
    sops.spline_lookup, grid=SigmaGrid(G), impl="pallas", interpret=False, platform="tpu"
  )

  def fwd_and_vjp(x, table, g):
    y, vjp = jax.vjp(op, x, table)
    return y, vjp(g)

  specs = (
    SDS((b, p, 2), jnp.float32),
    SDS((p, G + 1, G + 1, q), jnp.float32),
    SDS((b, q), jnp.float32),
  )
  text = _targets.compile_for_tpu(fwd_and_vjp, specs, target).as_text()
  assert text.count("tpu_custom_call") >= 3  # forward, dT and dx kernels


# ----------------------------------------------------------------------------------------------
# GPU (sm_90a): the Pallas-emitted Triton IR of each kernel compiled by the triton wheel and its
# bundled ptxas. Forward kernels of every GPU row must not spill (bound below) and dot kernels must
# use tensor cores (mma.sync or wgmma); the backward of every row compiles, its dT on tensor cores.
# The bit-plane Triton rows are the explicit (deprecated) choice: compiled through their config.

_TRITON_OK, _TRITON_WHY = _targets.triton_available()
needs_triton = pytest.mark.skipif(not _TRITON_OK, reason=_TRITON_WHY)
FORWARD_SPILL_BOUND = 64  # bytes of spill stores allowed in a forward kernel (measured: 0 on all)


def _gpu_facts(f, specs):
  kernels = _targets.triton_modules(f, specs)
  assert kernels, "no Triton kernel in the lowered graph"
  return [_targets.triton_compile(k) for k in kernels]


GPU_BITPLANE_ROWS = [
  pytest.param(bucket, x_name, id=f"{bucket}-x_{x_name}")
  for plat, bucket, _ in bblocks.production_configs()
  if plat == "gpu"
  for x_name in {"decode": ("bf16", "f32", "f16"), "prefill": ("bf16", "f32")}.get(
    bucket, ("bf16",)
  )
]
X_DTYPES = {"bf16": jnp.bfloat16, "f32": jnp.float32, "f16": jnp.float16}


@needs_triton
@pytest.mark.parametrize("bucket,x_name", GPU_BITPLANE_ROWS)
def test_bitplane_gpu_forward_compiles_without_spills_on_tensor_cores(bucket, x_name):
  m = BUCKET_M[bucket]
  # The Triton row as the table clamps it (f32 x: the partials variant, small blocks), named
  # explicitly: the default GPU kernel is the Mosaic GPU one.
  itemsize = jnp.dtype(X_DTYPES[x_name]).itemsize
  row = bblocks.pick_config("gpu", m, K, N, G_BITS, itemsize, f32_activations=x_name == "f32")
  op = functools.partial(bops.bitplane_matmul, impl="pallas", platform="gpu", config=row)
  specs = _bitplane_specs(m, K, N, jnp.float16, x_dtype=X_DTYPES[x_name])
  kernels = _targets.triton_modules(op, specs)
  assert kernels, "no Triton kernel in the lowered graph"
  for kernel, facts in zip(kernels, (_targets.triton_compile(k) for k in kernels)):
    assert facts["registers"] > 0, facts  # ptxas reported
    assert facts["spill_stores"] <= FORWARD_SPILL_BOUND, facts
    assert facts["mma"] + facts["wgmma"] > 0, facts
    if bucket == "decode":  # the unpack is shift / AND (to 0.0 / 2.0): no int -> float per weight
      assert facts["int_to_float"] == 0, facts
      # Instructions per (weight, plane) in the plane loop (PTX, per thread): 4.85 for bf16/f16
      # and 6.1 for f32 x (3 bf16 dots) with the shift-to-2.0 unpack; 7.8 / 9.0 with the former
      # AND, compare, select (setp + selp per weight).
      bn = bblocks.pick_config("gpu", m, K, N, G_BITS, 2).bn
      per_weight = facts["mma_loop_instr"] / (fmt.TILE * bn / (32 * kernel["num_warps"]))
      assert 0 < per_weight <= (6.5 if x_name == "f32" else 5.5), (per_weight, facts)


# The spline Triton rows are the explicit alternative (`table_row("gpu", G, variant="gather")`);
# the default GPU rows are the Mosaic GPU kernels, compiled in the Hopper section below.
SPLINE_TRITON_BUCKETS = [b for plat, b, _ in sblocks.alternative_configs() if plat == "gpu"]


def _spline_triton_op(G):
  return functools.partial(
    sops.spline_lookup,
    grid=SigmaGrid(G),
    impl="pallas",
    interpret=False,
    platform="gpu",
    block_sizes=sblocks.table_row("gpu", G, variant="gather").config,
  )


@needs_triton
@pytest.mark.parametrize("bucket", SPLINE_TRITON_BUCKETS)
def test_spline_gpu_forward_compiles_without_spills(bucket):
  G = BUCKET_G[bucket]
  op = _spline_triton_op(G)
  specs = (SDS((512, 8, 2), jnp.float32), SDS((8, G + 1, G + 1, 512), jnp.float32))
  for facts in _gpu_facts(op, specs):
    assert facts["registers"] > 0 and facts["spill_stores"] <= FORWARD_SPILL_BOUND, facts


@needs_triton
@pytest.mark.parametrize("bucket", SPLINE_TRITON_BUCKETS)
def test_spline_gpu_backward_compiles(bucket):
  """dx (gather) and dT (owner-computes, TF32x3 tensor-core dots) kernels of every Triton row. The
  backward may spill (not bounded here; `compile_report` lists the bytes): the (C_pad, dt_bq) dT
  accumulator lives in registers."""
  G = BUCKET_G[bucket]
  op = _spline_triton_op(G)
  specs = (
    SDS((512, 8, 2), jnp.float32),
    SDS((8, G + 1, G + 1, 512), jnp.float32),
    SDS((512, 512), jnp.float32),
  )
  facts = {f["name"]: f for f in _gpu_facts(lambda x, t, g: jax.vjp(op, x, t)[1](g), specs)}
  assert set(facts) >= {"spline_lookup_dtable_gpu", "spline_lookup_gather_dx"}, facts
  assert facts["spline_lookup_dtable_gpu"]["wgmma"] + facts["spline_lookup_dtable_gpu"]["mma"] > 0
  assert all(f["registers"] > 0 for f in facts.values()), facts


def test_decode_tpu_kernel_unpacks_without_int_to_float_conversion():
  """The Mosaic module of the TPU decode kernel has no int -> float conversion on unpacked
  groups (AND, compare, select); f16 scale rows (1 row each) may convert their subnormals."""
  import re

  with _fake_v5e_chip():
    op = functools.partial(bops.bitplane_matmul, impl="pallas", platform="tpu")
    for x_dtype in (jnp.bfloat16, jnp.float32):
      [text] = _targets.mosaic_modules(op, _bitplane_specs(1, K, N, jnp.float16, x_dtype=x_dtype))
      assert "arith.select" in text and "tpu.matmul" in text
      assert _targets.int_to_float_converts(text) == []
      # The plane loop is inside the kernel: a 3-axis grid (M, N, K blocks) and the active planes
      # DMA'd from HBM by the kernel itself (double-buffered), not a fourth grid axis.
      assert re.search(r"iteration_bounds = array<i64: \d+, \d+, \d+>", text), "grid is not 3-D"
      assert "tpu.enqueue_dma" in text and "tpu.wait_dma" in text


@contextlib.contextmanager
def _fake_v5e_chip():
  """Registers a v5e for the "cpu" device kind while lowering paths query the chip (private API:
  tests only, removed afterwards)."""
  from jax._src.pallas.mosaic import tpu_info
  from jax.experimental.pallas import tpu as pltpu

  previous = tpu_info.registry.get("cpu")
  tpu_info.registry["cpu"] = lambda: pltpu.get_tpu_info_for_chip(pltpu.ChipVersion.TPU_V5E, 1)
  try:
    yield
  finally:
    if previous is None:
      tpu_info.registry.pop("cpu", None)
    else:
      tpu_info.registry["cpu"] = previous


@pytest.mark.parametrize("G", [8, 12])
def test_spline_tpu_gather_kernels_do_the_sparse_lookups_flops(G):
  """The TPU alternative's forward and dx (variant="gather", lane gathers; its table row) in their
  Mosaic modules: no matmul; per pair and (32 outputs × 128 samples) tile the forward does
  4·C_pad/128 lane gathers (`tpu.dynamic_gather`, plus C_pad/128 − 1 selects per corner), 4 f32
  multiplies and 4 adds — 8 FLOPs per (sample, pair, output), the sparse lookup's count (the matrix
  form: 2·C_pad·3 in bf16 MXU passes). The table gradient stays the owner-computes kernel with
  three bf16 MXU dots. Then the same forward + VJP compiled by libtpu for v5e (the gather kernels
  are no production row, so this is where the compile tier compiles them)."""
  import re

  config = sblocks.table_row("tpu", G, variant="gather").config
  assert sblocks.plan("tpu", G, 2048, 8, 512, config).config == config  # the row, unclamped
  op = functools.partial(
    sops.spline_lookup,
    grid=SigmaGrid(G),
    impl="pallas",
    interpret=False,
    platform="tpu",
    block_sizes=config,
  )
  specs = (
    SDS((2048, 8, 2), jnp.float32),
    SDS((8, G + 1, G + 1, 512), jnp.float32),
    SDS((2048, 512), jnp.float32),
  )

  def fwd_and_vjp(x, table, g):
    y, vjp = jax.vjp(op, x, table)
    return y, vjp(g)

  with _fake_v5e_chip():
    texts = _targets.mosaic_modules(fwd_and_vjp, specs)
  by_name = {re.search(r"func\.func @(\w+)", t).group(1): t for t in texts}
  assert set(by_name) == {
    "spline_lookup_fwd_gather_tpu",
    "spline_lookup_dx_gather_tpu",
    "spline_lookup_dtable_tpu",
  }
  chunks = sblocks.corner_pad(G) // 128
  tile = r"vector<32x128xf32>"
  fwd = by_name["spline_lookup_fwd_gather_tpu"]
  count = lambda op_, text: len(re.findall(rf"{op_} [^\n]*: {tile}\n", text))
  assert "tpu.matmul" not in fwd and "tpu.matmul" not in by_name["spline_lookup_dx_gather_tpu"]
  assert len(re.findall(rf"tpu\.dynamic_gather [^\n]*-> {tile}", fwd)) == 4 * chunks
  assert count("arith.mulf", fwd) == 4 and count("arith.addf", fwd) == 4
  assert len(re.findall(r"arith\.select [^\n]*vector<32x128xf32>", fwd)) == 4 * (chunks - 1)
  assert len(re.findall(r"tpu\.matmul", by_name["spline_lookup_dtable_tpu"])) == 3
  if not _OK:
    pytest.skip(f"Mosaic-module checks passed; the libtpu compile needs libtpu: {_WHY}")
  text = _targets.compile_for_tpu(fwd_and_vjp, specs, "v5e").as_text()
  assert text.count("tpu_custom_call") >= 3  # forward, dT and dx kernels


def test_spline_tpu_kernels_use_three_bf16_mxu_passes():
  """The Mosaic modules of the TPU production (portable) spline kernels at the small row (forward,
  dT, dx; bp = 8, C_pad = 128, bb = 512): every matmul has bf16 operands (the explicit bf16x3
  split, `_dots.bf16x3_dot`), three per dot, and none asks for `contract_precision<fp32>`
  (HIGHEST: six passes).

  The traced function runs each kernel exactly once (the forward's output is the VJP's own
  primal), so the modules are one per kernel whatever the lowering prunes: jax 0.12 removes a
  pallas_call whose outputs are unused (a second, dead forward is not lowered), where jax 0.10
  and 0.11 kept every one."""
  import re

  assert sblocks.plan("tpu", 8, 512, 8, 512).config == sblocks.table_row("tpu", 8).config
  assert sblocks.table_row("tpu", 8).config.variant == "portable"
  op = functools.partial(
    sops.spline_lookup, grid=SigmaGrid(8), impl="pallas", interpret=False, platform="tpu"
  )
  specs = (
    SDS((512, 8, 2), jnp.float32),
    SDS((8, 9, 9, 512), jnp.float32),
    SDS((512, 512), jnp.float32),
  )

  def fwd_and_vjp(x, table, g):
    y, vjp = jax.vjp(op, x, table)
    return y, vjp(g)

  texts = _targets.mosaic_modules(fwd_and_vjp, specs)
  names = sorted(re.search(r"func\.func @(\w+)", t).group(1) for t in texts)
  assert names == ["spline_lookup_dtable_tpu", "spline_lookup_dx_tpu", "spline_lookup_fwd_tpu"]
  for text in texts:
    if "func.func @spline_lookup_fwd_tpu" in text:
      # Forward: the pair block's interpolation matrices are built once per (pair block, B-block)
      # into two bf16 VMEM scratch buffers (heads and tails, (bp, C_pad, bb)), reused by every
      # output tile of the resident output column.
      assert "scratch_operands = 2" in text
      assert text.count("memref<8x128x512xbf16, #tpu.memory_space<vmem>") >= 2
    matmuls = re.findall(r"tpu\.matmul [^\n]*", text)
    assert len(matmuls) == 3 and "contract_precision<fp32>" not in text, matmuls
    assert all(
      re.search(r": vector<\w+xbf16>, vector<\w+xbf16>, vector<\w+xf32>", m) for m in matmuls
    ), matmuls


def _llo_counts(case: str) -> dict:
  """`python -m benchmarks.tpu_llo --case=CASE --json` in a subprocess (libtpu reads its
  dump flag once, when it loads)."""
  import json
  import os
  import subprocess
  import sys

  env = dict(os.environ, JAX_PLATFORMS="cpu", ALLOW_MULTIPLE_LIBTPU_LOAD="1")
  root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  out = subprocess.run(
    [sys.executable, "-m", "benchmarks.tpu_llo", f"--case={case}", "--json"],
    cwd=root,
    env=env,
    capture_output=True,
    text=True,
    timeout=600,
    check=True,
  )
  return json.loads(out.stdout.strip().splitlines()[-1])


@needs_libtpu
def test_decode_tpu_plane_loop_issues_about_one_vector_op_per_weight_plane():
  """The compiled (final LLO, v5e) plane loop of the decode kernel (M = 1, bf16 x, f16 scales)
  issues 1.26 VALU ops per (weight, plane): two weights per shift + AND (`format.pair_words`)
  plus the MXU's partial-sum adds, the alpha widening and the group epilogue. The unpack it
  replaced (shift, AND, compare, select, narrowing per weight) issued 7.1 there."""
  r = _llo_counts("decode_bf16")
  assert r["per_element"]["valu"] <= 1.4, r
  assert r["ops"]["mxu"] > 0 and r["ops"]["permute"] == 0, r


@needs_libtpu
def test_spline_tpu_forward_tile_loop_is_the_sparse_lookup():
  """The compiled (final LLO, v5e) output-tile loop of the TPU gather forward (variant="gather")
  at G = 8: per (sample, pair, output) 8 VALU ops (4 multiplies, 4 adds: the sparse lookup's
  FLOPs) and 4 lane gathers of 3 cross-lane ops each; no matrix unit. These counts, at the
  third-party cross-lane rate, are why it is not the production TPU row (`blocks.py`). With
  `jnp.take_along_axis`'s negative-index wrap (on by default even under "promise_in_bounds" in
  every jax this project allows; jax 0.10 did not wrap) the loop issued 11: a compare, add and
  select per corner index, which `kernel_tpu_gather._lane_gather` does not ask for (its indices
  are `& 127`)."""
  r = _llo_counts("spline_fwd_g8")
  assert r["per_element"]["valu"] == 8.0 and r["per_element"]["permute"] == 12.0, r
  assert r["ops"]["mxu"] == 0, r


# ----------------------------------------------------------------------------------------------
# Hopper: the Mosaic GPU kernels (the lookup-table decode GEMV, kernel_mgpu, and the general-M
# wgmma kernel, kernel_wgmma), compiled for a compile-only H200 (jax-cuda13-plugin + pjrt;
# `jax.default_device` set to it, so the public op's own dispatch picks the kernel), PTX and
# ptxas report from the plugin's dump, SASS from the triton wheel.

_CUDA_OK, _CUDA_WHY = _targets.cuda_available()
needs_cuda = pytest.mark.skipif(not (_CUDA_OK and _TRITON_OK), reason=_CUDA_WHY or _TRITON_WHY)


@needs_cuda
def test_bitplane_lut_kernel_compiles_for_sm90a_at_under_one_ptx_per_weight_plane():
  """The public op (platform="gpu", M = 1, K = N = 1024, bf16 x, f16 scales with beta) compiles
  to the LUT kernel; its hot loop (one plane: 256 · 4 weights per thread) issues <= 1.0 PTX
  instruction per (weight, plane) (measured 0.53: per byte bfe + mad + ld.shared + add), the whole
  kernel at p = 2 with the table build <= 1.0 (0.75), and ptxas spills nothing. (x of any dtype
  is widened to f32 before the kernel, so the kernel is the same for f32 / f16 x; Mosaic GPU
  does not dump a kernel it has already compiled in the process.)"""
  op = functools.partial(bops.bitplane_matmul, impl="pallas", platform="gpu")
  specs = _bitplane_specs(1, K, N, jnp.float16)
  r = _targets.lut_facts(op, specs, weights_per_iteration=fmt.TILE * 4)
  assert r["spill_stores"] == 0 and r["spill_loads"] == 0 and r["registers"] > 0, r
  assert 0 < r["ptx_per_wp_loop"] <= 1.0 and r["ptx_per_wp_kernel"] <= 1.0, r
  assert 0 < r["sass_per_wp_loop"] <= 1.0, r


@needs_cuda
def test_bitplane_gpu_dispatch_on_h200_lut_for_decode_wgmma_beyond():
  """On the compile-only H200 a mixed-precision 3-row call goes to the LUT kernel and an 8-row
  call to the wgmma kernel (Mosaic GPU both; Triton only when a config names it)."""
  op = functools.partial(bops.bitplane_matmul, impl="pallas", platform="gpu")
  names = lambda m, mixed: [k["name"] for k in _targets.mgpu_compile(
    op, _bitplane_specs(m, K, N, jnp.float16, mixed=mixed))]  # fmt: skip
  assert any("lut" in n for n in names(3, True))
  eight = names(8, False)
  assert len(eight) == 1 and "wgmma" in eight[0], eight


WGMMA_M = {"decode": 16, "small": 64, "prefill": 512}  # each row's largest M (decode: past LUT)
WGMMA_CASES = [
  pytest.param(WGMMA_M[b], "bf16", False, G_BITS, id=f"{b}-M{WGMMA_M[b]}-x_bf16")
  for _, b, _ in bblocks.mosaic_gpu_configs()
] + [
  pytest.param(64, "f32", False, G_BITS, id="small-M64-x_f32"),
  pytest.param(16, "f16", True, G_BITS, id="decode-M16-x_f16-mixed"),
  # The register-heaviest settings measured: g = 256 (a (64, 256) register operand) at bm = 128,
  # and f32 x with per-row precisions at g = 256 (255 registers, no spills).
  pytest.param(512, "bf16", False, 256, id="prefill-M512-x_bf16-g256"),
  pytest.param(512, "f32", True, 256, id="prefill-M512-x_f32-mixed-g256"),
]


@needs_cuda
@pytest.mark.parametrize("m,x_name,mixed,g", WGMMA_CASES)
def test_bitplane_wgmma_kernel_compiles_for_sm90a_on_tensor_cores(m, x_name, mixed, g):
  """The public op on the compile-only H200 (K = N = 1024, f16 scales with beta) picks the wgmma
  kernel for every WGMMA_TABLE row (bf16 x), for f32 x (three bf16 terms along wgmma's N) and for
  the mixed-precision variant; Mosaic GPU compiles it to sm_90a PTX with wgmma instructions (no
  mma.sync) and ptxas spills nothing (measured at g = 128: 74 / 127 / 188 registers for the
  decode / small / prefill rows; 226 at g = 256)."""
  op = functools.partial(bops.bitplane_matmul, impl="pallas", platform="gpu")
  specs = _bitplane_specs(m, K, N, jnp.float16, mixed=mixed, x_dtype=X_DTYPES[x_name], g=g)
  [k] = _targets.mgpu_compile(op, specs)
  assert "wgmma" in k["name"] and ("mixed" in k["name"]) == mixed, k["name"]
  assert k["registers"] > 0 and k["spill_stores"] == 0 and k["spill_loads"] == 0, k
  assert "wgmma.mma_async" in k["ptx"] and "mma.sync" not in k["ptx"]


@needs_cuda
def test_roofline_counts_of_the_mosaic_gpu_kernels_are_their_compiled_loops():
  """The H200 estimates of the default GPU kernels rest on SASS counts (`_roofline.WGMMA_SASS_LOOP`,
  `_roofline.SPLINE_MGPU_FWD_SASS`): they are the hot loops as compiled for sm_90a, by unit
  (`compile_report.sass_loop_units`): the wgmma kernel's group loop at g = 128, bm = 16 and 64
  (160 integer ops unpacking the thread's 64 weights, 2 + bm / 2 FP32, 196 + bm / 2 in all), and
  the spline forward's pair loop (16 samples × 1 column per thread). Shapes differ from the other
  tests' (K = N = 512; Q = 256) because Mosaic GPU dumps a kernel only the first time it compiles
  it in a process; the loops do not depend on them."""
  from benchmarks import _roofline
  from benchmarks import compile_report

  def loop(kernels, markers):
    [k] = kernels
    return compile_report.sass_loop_units(_targets.sass_of(k["ptx"])[0], markers)

  op = functools.partial(bops.bitplane_matmul, impl="pallas", platform="gpu")
  want = _roofline.WGMMA_SASS_LOOP
  for m in (16, 64):  # bm = M at these rows
    u = loop(
      _targets.mgpu_compile(op, _bitplane_specs(m, 512, 512, jnp.float16)), ("HGMMA", "LOP3")
    )
    assert abs(u["int"] - want["int"]) <= 2 and u["mma"] > 0, u
    assert u["fp32"] == want["fp32"] + m // 2, u
    assert abs(u["issue"] - (want["issue"] + m // 2)) <= 8, u
  G, b, q = 8, 256, 256
  sop = functools.partial(
    sops.spline_lookup, grid=SigmaGrid(G), impl="pallas", interpret=False, platform="gpu"
  )
  specs = (SDS((b, 8, 2), jnp.float32), SDS((8, G + 1, G + 1, q), jnp.float32))
  cfg = sblocks.plan("gpu", G, b, 8, q).config
  per_iteration = cfg.fwd_bb * cfg.fwd_bq // sblocks.MGPU_THREADS  # (sample, column) per thread
  u = loop(_targets.mgpu_compile(sop, specs), ("LDG", "FFMA"))
  per = {k: v / per_iteration for k, v in u.items()}
  for unit, value in _roofline.SPLINE_MGPU_FWD_SASS.items():
    assert per[unit] == pytest.approx(value, rel=0.05), (unit, per)
  assert per["issue"] == pytest.approx(_roofline.SPLINE_MGPU_FWD_ISSUE, rel=0.05), per


@needs_libtpu
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("x_name", ["f16", "bf16", "f32"])
def test_bitplane_decode_compiles_for_every_activation_dtype(target, x_name):
  """Every activation dtype the op accepts, at M = 1 and M = 8 (decode row), output in x's dtype.
  float16 x failed here before (Mosaic: "failed to legalize operation 'xir.pack_subelements'" on
  a float16 output block); the kernel now writes f32 for a float16 output, narrowed after it."""
  op = functools.partial(bops.bitplane_matmul, impl="pallas", platform="tpu")
  for m in (1, 8):
    specs = _bitplane_specs(m, 512, 512, jnp.float16, x_dtype=X_DTYPES[x_name])
    _targets.compile_for_tpu(op, specs, target)


# ----------------------------------------------------------------------------------------------
# Hopper: the Mosaic GPU spline kernels (`spline_lookup/kernel_mgpu.py`, the default GPU rows)
# compiled for the compile-only H200 through the public op (forward and VJP: forward, dT and dx
# kernels), ptxas report from the plugin's dump. Needs only the CUDA plugin (no SASS here).

needs_cuda_plugin = pytest.mark.skipif(not _CUDA_OK, reason=_CUDA_WHY)
SPLINE_MGPU_KERNELS = {
  "spline_lookup_fwd_mgpu",
  "spline_lookup_dtable_mgpu",
  "spline_lookup_dx_mgpu",
}


@needs_cuda_plugin
@pytest.mark.parametrize(
  "bucket", [b for plat, b, _ in sblocks.production_configs() if plat == "gpu"]
)
def test_spline_mgpu_kernels_compile_for_sm90a_without_spills(bucket):
  """Every production GPU row (B = 512, P = 8, Q = 512, the row unclamped) compiles to the three
  Mosaic GPU kernels for sm_90a, and ptxas spills nothing (measured at G = 8: forward 126
  registers with its 16 unrolled samples, dT 32, dx 40). On that device the op's capability
  check admits the kernels (compute capability 9.0)."""
  G = BUCKET_G[bucket]
  b, p, q = 512, 8, 512
  config = sblocks.table_row("gpu", G).config
  assert config.variant == "mgpu" and sblocks.plan("gpu", G, b, p, q).config == config
  op = functools.partial(
    sops.spline_lookup, grid=SigmaGrid(G), impl="pallas", interpret=False, platform="gpu"
  )

  def fwd_and_vjp(x, table, g):
    y, vjp = jax.vjp(op, x, table)
    return y, vjp(g)

  specs = (
    SDS((b, p, 2), jnp.float32),
    SDS((p, G + 1, G + 1, q), jnp.float32),
    SDS((b, q), jnp.float32),
  )
  kernels = {k["name"].rsplit("_", 1)[0]: k for k in _targets.mgpu_compile(fwd_and_vjp, specs)}
  assert set(kernels) == SPLINE_MGPU_KERNELS, sorted(kernels)
  for k in kernels.values():
    assert k["registers"] > 0 and k["spill_stores"] == 0 and k["spill_loads"] == 0, k
    assert "ld.global" in k["ptx"] and "bar.sync" in k["ptx"], k["name"]
  with jax.default_device(_targets.gpu_devices("1x1x1")[0]):
    assert sops.mgpu_capable()
