"""Tier 1 for the lmKAN spline lookup: every Pallas kernel variant in interpret mode vs the reference.

lmKAN (Pozdnyakov & Schwaller, ICLR 2026; github.com/schwallergroup/lmkan). Variants, run through the
public op with `impl="pallas", interpret=True`:
  * "tpu-gather"        the TPU alternative (variant="gather", `blocks.table_row("tpu", 12,
                        variant="gather")`): Mosaic lane-gather fwd and dx (f32 VPU arithmetic;
                        G = 12, so the corner axis spans two 128-lane chunks), owner-computes dT;
  * "tpu-portable"      the TPU table row: interpolation-matrix fwd / owner-computes dT / dx, Mosaic
                        parameters;
  * "gpu-mgpu"          the default GPU kernels (`kernel_mgpu.py`, Mosaic GPU, `plgpu.kernel`) in
                        Mosaic GPU's interpret mode (`plgpu.InterpretGPUParams`: shared memory
                        simulated, uninitialised memory NaN): uniform row loads for the forward and
                        dx, owner-computes dT in shared memory. fwd_bb = 64 stages 2 pairs at a time,
                        so P = 3 takes two pair chunks;
  * "gpu-portable"      the same bodies as "tpu-portable" with Triton parameters and in-kernel
                        reduction loops (Triton: explicit only);
  * "gpu-gather"        Triton gather fwd and dx, owner-computes dT;
  * "gpu-gather-atomic" Triton gather fwd and dx, row-segment atomic dT (one table row per atomic call,
                        so interpret mode accumulates duplicates across calls correctly).
Each case uses one batch that holds every edge case at once (B = 37, not a block multiple; P = 3;
Q = 20): random samples, samples far outside the grid (|x| up to 50: linear extrapolation), samples
exactly on nodes (outer nodes included), and 13 samples whose every pair lies in one cell (the worst
case for table-gradient accumulation). Grid sizes differ per case (G = 3, the minimum with its own
extrapolation rule, up to 10) so several C layouts are covered without extra compiles: one jitted
value-and-grad function per case.

The same cases rerun compiled (`mode="hardware"`) when the default backend is a TPU, or a CUDA GPU with
compute capability ≥ 9.0 for the Mosaic GPU variant and ≥ 8.0 for the Triton variants; their dots are
the same 3-pass algorithms as in interpret mode (bf16x3 on TPU, TF32x3 on GPU; the Mosaic GPU kernels
have no dots, only f32 multiply-adds), so the tolerances hold (the atomic variant is compared with the
tolerance, never bitwise).

Tolerance: max |kernel − reference| ≤ 1e-5·(1 + max |reference|) per output for the GPU variants
(TF32x3 dots, ~2^-21 per product; the Mosaic GPU kernels sum the same f32 products as the reference
in another order, measured ≤ 3e-7 here) and 5e-5·(1 + ...) for the TPU variant, whose dots are three bf16
passes (`_dots.bf16x3_dot`: ≤ ~3·2^-16 ≈ 4.6e-5 of |a|·|b| per product; measured up to 1.4e-5 on
these inputs, see `kernel_portable.dot_mode`). Both sides are f32 with
different summation orders (matmuls over the padded corner axis vs gathers and segment sums); the
reference itself deviates from a float64 evaluation by about 1e-6 of the largest value (measured), so
1e-5 leaves an order of magnitude while a wrong corner, weight, cell or padding gives O(1) errors.
Gradients are of a nonlinear, well-conditioned loss Σ R⊙y + ½·10⁻⁴Σy² (see `_loss`). Nodes are
included in the gradient comparison: the kernel and the reference compute the cell ⌊G·σ(x)⌋ with the
same f32 operations, so they take the same one-sided derivative there.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kernels_pallas import _backend

from kernels_pallas.spline_lookup import blocks
from kernels_pallas.spline_lookup import kernel_portable as kp
from kernels_pallas.spline_lookup import kernel_tpu_gather as ktg
from kernels_pallas.spline_lookup import kernel_triton_gather as kg
from kernels_pallas.spline_lookup import ops
from kernels_pallas.spline_lookup import reference as ref
from kernels_pallas.spline_lookup.grid import SigmaGrid

B, P, Q = 37, 3, 20
F32 = jnp.float32

# Small Triton blocks (production blocks are covered by cross-lowering): 16 < B, Q exercises several
# programs and in-kernel windows; TPU blocks come from the table, clamped to the problem.
_GPU_SMALL = dict(fwd_bq=16, fwd_bb=16, dt_bq=16, dt_bb=16, dx_bb=16, dx_bq=16)
CASES = {
  # The TPU alternative: lane gathers, C_pad = 256 (two lane chunks).
  "tpu-gather": ("tpu", blocks.table_row("tpu", 12, variant="gather").config, 12),
  "tpu-portable": ("tpu", blocks.BlockSizes("portable"), 8),  # bf16x3 dots
  # Mosaic GPU: 128-column blocks (the warpgroup), 64 samples per forward block (2 pairs staged at
  # a time: two pair chunks at P = 3), dT unsplit (C_pad = 128 at G = 7).
  "gpu-mgpu": ("gpu", blocks.BlockSizes("mgpu", fwd_bb=64, fwd_bp=2), 7),
  "gpu-portable": ("gpu", blocks.BlockSizes("portable", **_GPU_SMALL), 3),
  "gpu-gather": ("gpu", blocks.BlockSizes("gather", **_GPU_SMALL), 10),
  "gpu-gather-atomic": ("gpu", blocks.BlockSizes("gather", "atomic", **_GPU_SMALL), 5),
}
TOL = {"tpu": 5e-5, "gpu": 1e-5}  # bf16x3 (3 bf16 MXU passes) / TF32x3 dots; see the docstring


def _inputs(G: int, seed: int = 0):
  """x (B, P, 2) with every edge case, and a random table (P, G+1, G+1, Q); NumPy draws (fast)."""
  rng = np.random.default_rng(seed)
  t = SigmaGrid(G).nodes.astype(np.float32)
  rand = rng.standard_normal((16, P, 2)) * 1.5
  far = np.array([[50.0, -50.0], [-20.0, 35.0], [-50.0, -7.0], [9.0, 50.0]])[:, None, :]
  far = np.broadcast_to(far, (4, P, 2)) * rng.uniform(0.8, 1.0, (4, P, 1))
  k = [0, G, 1, G // 2]  # outer, outer, interior nodes
  nodes = np.array([[t[k[i]], t[k[(i + 1) % 4]]] for i in range(4)])[:, None, :]
  nodes = np.broadcast_to(nodes, (4, P, 2))
  c = 1  # one cell for every pair
  mid = t[c] + (t[c + 1] - t[c]) * rng.uniform(0.2, 0.8, (13, P, 2))
  x = np.concatenate([rand, far, nodes, mid]).astype(np.float32)
  table = rng.standard_normal((P, G + 1, G + 1, Q)).astype(np.float32)
  return jnp.asarray(x), jnp.asarray(table)


_R = jnp.asarray(np.random.default_rng(7).standard_normal((B, Q)), F32)


def _loss(y):
  """Nonlinear, well-conditioned scalar loss: the cotangent R + y/10⁴ depends on y. (Σ sin(y) is
  ill-conditioned here: far outside the grid |y| reaches ~10³, where f32 rounding of y alone moves
  cos(y) by ~1e-4.)"""
  r = _R if y.shape == _R.shape else 1.0
  return jnp.sum(r * y) + 0.5e-4 * jnp.sum(y * y)


def _loss_and_grads(fn):
  def loss(x, table):
    y = fn(x, table)
    return _loss(y), y

  return jax.jit(jax.value_and_grad(loss, argnums=(0, 1), has_aux=True))


@functools.lru_cache(maxsize=None)
def _kernel_fn(name, interpret=True):
  platform, bs, G = CASES[name]
  grid = SigmaGrid(G)
  return _loss_and_grads(
    functools.partial(
      ops.spline_lookup,
      grid=grid,
      impl="pallas",
      interpret=interpret,
      platform=platform,
      block_sizes=bs,
    )
  )


def _on_hardware(name) -> bool:
  """The default backend runs this case's kernels compiled (tier 3; skipped on CPU)."""
  platform, bs, _ = CASES[name]
  backend = jax.default_backend()
  if platform == "tpu":
    return backend == "tpu"
  if bs.variant == "mgpu":
    return backend == "gpu" and ops.mgpu_capable()
  return backend == "gpu" and _backend.triton_capable()


@functools.lru_cache(maxsize=None)
def _ref_fn(G):
  return _loss_and_grads(functools.partial(ref.spline_lookup_xla, grid=SigmaGrid(G)))


def _close(got, want, tol=1e-5):
  got, want = np.asarray(got), np.asarray(want)
  assert got.shape == want.shape and np.all(np.isfinite(got))
  err, scale = np.max(np.abs(got - want)), np.max(np.abs(want))
  assert err <= tol * (1.0 + scale), f"max error {err:.3g} vs scale {scale:.3g}"


@pytest.mark.parametrize("mode", ["interpret", "hardware"])
@pytest.mark.parametrize("name", list(CASES))
def test_variant_matches_reference_forward_and_gradients(name, mode):
  if mode == "hardware" and not _on_hardware(name):
    pytest.skip(f"needs a {CASES[name][0]} backend that compiles this variant")
  G = CASES[name][2]
  x, table = _inputs(G)
  (_, y), (dx, dt) = _kernel_fn(name, mode == "interpret")(x, table)
  (_, y_ref), (dx_ref, dt_ref) = _ref_fn(G)(x, table)
  assert y.shape == (B, Q) and dx.shape == x.shape and dt.shape == table.shape
  tol = TOL[CASES[name][0]]
  # The TPU gather forward and dx multiply in f32 on the VPU (no bf16 split): the GPU bound holds.
  tol_gather = 1e-5 if name == "tpu-gather" else tol
  _close(y, y_ref, tol_gather)
  _close(dx, dx_ref, tol_gather)
  _close(dt, dt_ref, tol)


def test_owner_computes_backward_is_bitwise_repeatable_and_padded_rows_get_zero():
  G = 8
  x, table = _inputs(G, seed=1)
  fn = _kernel_fn("tpu-portable")
  (_, _), (dx1, dt1) = fn(x, table)
  (_, _), (dx2, dt2) = fn(x, table)
  np.testing.assert_array_equal(np.asarray(dt1), np.asarray(dt2))
  np.testing.assert_array_equal(np.asarray(dx1), np.asarray(dx2))
  # Raw kernel output: padded corner rows (G+1)² .. C_pad and padded samples (zero cotangent) give
  # exactly zero; the real rows equal the reference segment-sum.
  c, c_pad, g1p = (G + 1) ** 2, blocks.corner_pad(G), blocks.node_pad(G)
  b_pad, q_pad = 128, 128
  grid = SigmaGrid(G)
  xt = jnp.pad(jnp.transpose(x, (1, 2, 0)), ((0, 0), (0, 0), (0, b_pad - B)))
  gy = np.zeros((q_pad, b_pad), np.float32)
  gy[:Q, :B] = np.random.default_rng(2).standard_normal((Q, B))
  nodes = jnp.pad(grid.node_array(F32), (0, g1p - G - 1))
  invw = jnp.pad(grid.inv_width_array(F32), (0, g1p - G))

  @jax.jit
  def raw(xt, gy):
    return kp.portable_table_grad(
      xt,
      gy,
      nodes[:, None],
      invw[:, None],
      G=G,
      c_pad=c_pad,
      platform="tpu",
      bq=128,
      bbo=128,
      bb=128,
      interpret=True,
    )

  dt_a, dt_b = raw(xt, jnp.asarray(gy)), raw(xt, jnp.asarray(gy))
  np.testing.assert_array_equal(np.asarray(dt_a), np.asarray(dt_b))
  assert np.all(np.asarray(dt_a)[:, c:, :] == 0.0)
  _, dt_ref = ref.spline_lookup_vjp(x, table, grid, jnp.asarray(gy[:Q, :B].T))
  _close(np.asarray(dt_a)[:, :c, :Q].reshape(P, G + 1, G + 1, Q), dt_ref, TOL["tpu"])


def test_affine_tables_reproduce_linear_map_far_outside_grid():
  """Affine tables through the kernels: T[p,i,j,q] = W[q,2p]·t_i + W[q,2p+1]·t_j makes y = x·Wᵀ everywhere."""
  G = 8
  grid = SigmaGrid(G)
  rng = np.random.default_rng(3)
  w = rng.standard_normal((Q, 2 * P)).astype(np.float32)
  t = grid.nodes
  table = (
    w.reshape(Q, P, 2)[:, :, 0].T[:, None, None, :] * t[None, :, None, None]
    + w.reshape(Q, P, 2)[:, :, 1].T[:, None, None, :] * t[None, None, :, None]
  )
  x = (rng.standard_normal((B, P, 2)) * 10.0).astype(np.float32)  # most |x| > ln 8 ≈ 2.08
  (_, y), _ = _kernel_fn("tpu-portable")(jnp.asarray(x), jnp.asarray(table, F32))
  want = x.astype(np.float64).reshape(B, 2 * P) @ w.T.astype(np.float64)
  # Far outside the grid the four extrapolation weights grow like δ² (|δ| up to ~30) and cancel to
  # an output ~δ: the bf16x3 dots' error is relative to the absolute sum Σ_p Σ_k |w_k|·|T_k|, not to
  # |y|. Per entry: |y − want| ≤ 3·2^-16·Σ|w||T| (the per-product bound of `_dots.bf16x3_dot`) plus
  # the f32 rounding of tables and weights, 1e-5 of the output scale as above.
  cw = ref.corner_weights(jnp.asarray(x, F32), grid)
  flat = np.asarray(cw["flat"])
  absf = np.abs(table).reshape(P, (G + 1) ** 2, Q)
  mag = sum(
    np.abs(np.asarray(cw["w"][k]))[:, :, None] * absf[np.arange(P)[None], flat + o]
    for k, o in enumerate((0, 1, G + 1, G + 2))
  ).sum(axis=1)  # (B, Q)
  err = np.abs(np.asarray(y, np.float64) - want)
  assert np.all(err <= 3 * 2.0**-16 * mag + 1e-5 * (1 + np.abs(want).max())), np.max(err / mag)


@pytest.mark.parametrize(
  "args, match",
  [
    (dict(x=(B, P), table=(P, 9, 9, Q)), r"x must have shape \(B, P, 2\)"),
    (dict(x=(B, P, 2), table=(P, 9, 9)), r"table must have shape \(P, G\+1, G\+1, Q\)"),
    (dict(x=(B, P, 2), table=(P + 1, 9, 9, Q)), r"table must have shape"),
    (
      dict(x=(B, P, 2), table=(P, 9, 9, Q), dtype=jnp.int32),
      "float32, float64, bfloat16 or float16",
    ),
    (dict(x=(B, P, 2), table=(P, 4, 4, Q), G=2), r"must be >= 3"),
    (dict(x=(B, P, 2), table=(P, 9, 9, Q), impl="cuda"), "impl must be one of"),
    (dict(x=(B, P, 2), table=(P, 9, 9, Q), platform="rocm"), "platform must be"),
    (dict(x=(B, P, 2), table=(P, 9, 9, Q), block_sizes=(64, 64)), "block_sizes must be"),
    (dict(x=(B, P, 2), table=(P, 9, 9, Q), block_sizes="atomic-tpu"), "atomic' is Triton-only"),
    (
      dict(x=(B, P, 2), table=(P, 9, 9, Q), dtype=jnp.float64, interpret=False),
      "float32, bfloat16 or float16 for the compiled",
    ),
  ],
)
def test_clear_errors(args, match):
  dtype = args.get("dtype", F32)
  G = args.get("G", 8)
  bs = args.get("block_sizes")
  if bs == "atomic-tpu":
    bs = blocks.BlockSizes("gather", "atomic")
  with jax.enable_x64(dtype == jnp.float64):
    x = jnp.zeros(args["x"], dtype)
    table = jnp.zeros(args["table"], dtype)
    with pytest.raises(ValueError, match=match):
      ops.spline_lookup(
        x,
        table,
        G,
        impl=args.get("impl", "pallas"),
        interpret=args.get("interpret", True),
        block_sizes=bs,
        platform=args.get("platform", "tpu"),
      )


def test_block_sizes_validation_and_atomic_kernel_index_checks():
  with pytest.raises(ValueError, match="power of two"):
    blocks.BlockSizes(fwd_bq=96)
  with pytest.raises(ValueError, match="dtable='atomic' needs variant='gather'"):
    blocks.BlockSizes(dtable="atomic")
  with pytest.raises(ValueError, match="atomic_table_grad"):
    kg.atomic_table_grad(
      jnp.zeros((1, 2, 24)),
      jnp.zeros((24, 16)),
      jnp.zeros(16),
      jnp.zeros(16),
      G=8,
      c_pad=128,
      bb=16,
      bq=16,
      interpret=True,
    )
  # The TPU gather kernel walks its output block in 32-row tiles: a 40-row block would leave rows.
  with pytest.raises(ValueError, match="multiple of 32"):
    ktg.tpu_gather_forward(
      jnp.zeros((1, 2, 128)),
      jnp.zeros((1, 80, 128)),
      jnp.zeros((8, 1)),
      jnp.zeros((8, 1)),
      G=8,
      bq=40,
      bb=128,
      bp=1,
      interpret=True,
    )


def test_bf16x3_dot_error_bound_against_float64():
  """`_dots.bf16x3_dot` (the TPU kernels' dot) vs a float64 matmul: every entry within
  3·2^-16·(|a|·|b|) (+ f32 summation), while a single bf16 pass misses that bound by ~100x (so the
  check separates 3 passes from 1). Shapes as in the forward: T_p (C_pad, bq) against S_p (C_pad, bb)
  contracting the corner axis, with S's bilinear-weight range (|δ| up to ~30 outside the grid)."""
  from kernels_pallas import _dots

  rng = np.random.default_rng(11)
  a = rng.standard_normal((128, 16)).astype(np.float32)
  b = (rng.standard_normal((128, 32)) * np.exp(rng.uniform(-3, 3, (128, 32)))).astype(np.float32)
  exact = a.astype(np.float64).T @ b.astype(np.float64)
  bound = 3 * 2.0**-16 * (np.abs(a).astype(np.float64).T @ np.abs(b)) + 1e-6 * np.abs(exact)
  got = np.asarray(jax.jit(lambda u, v: _dots.bf16x3_dot(u, v, (0, 0)))(a, b), np.float64)
  assert np.all(np.abs(got - exact) <= bound)
  one = np.asarray(
    jax.lax.dot_general(
      jnp.asarray(a, jnp.bfloat16),
      jnp.asarray(b, jnp.bfloat16),
      (((0,), (0,)), ((), ())),
      preferred_element_type=F32,
    )
  )
  assert np.max(np.abs(one - exact) / bound) > 10.0


def test_tpu_forward_resident_output_equals_tiled_forward_bitwise():
  """The TPU forward with the output column resident (matrices built once per (pair, B-block)) and
  the tiled one (rebuilt per output tile; chosen when the column does not fit, forced here by a tiny
  VMEM limit) sum the same terms in the same order: bitwise equal. 3 output tiles, 2 pair blocks,
  2 batch blocks."""
  G, bp, bq, bb = 8, 2, 128, 128
  rng = np.random.default_rng(5)
  x = jnp.asarray(rng.standard_normal((4, 2, 256)) * 2.0, F32)
  table = jnp.asarray(rng.standard_normal((4, blocks.corner_pad(G), 384)), F32)
  grid, g1p = SigmaGrid(G), blocks.node_pad(G)
  nodes = jnp.pad(grid.node_array(F32), (0, g1p - G - 1))[:, None]
  invw = jnp.pad(grid.inv_width_array(F32), (0, g1p - G))[:, None]

  def fwd(vmem_limit_bytes):
    f = functools.partial(
      kp.portable_forward,
      G=G,
      platform="tpu",
      bq=bq,
      bb=bb,
      bp=bp,
      vmem_limit_bytes=vmem_limit_bytes,
      interpret=True,
    )
    return np.asarray(jax.jit(f)(x, table, nodes, invw))

  resident, tiled = fwd(None), fwd(4096)
  np.testing.assert_array_equal(resident, tiled)
  assert np.max(np.abs(resident)) > 1.0


@pytest.mark.parametrize("G", [8, 14, 26, 40])  # one grid size per bucket
@pytest.mark.parametrize("b", [4096, 65536])
def test_tpu_row_variant_is_the_faster_roofline_estimate(b, G):
  """The TPU table row's variant is the forward with the smaller per-unit roofline estimate
  (`_roofline.spline_tpu_choice`: MXU, VALU, cross-lane and HBM, each variant with its own row's
  batch block) at 512 -> 512. An estimate that rests on the third-party cross-lane rate, not a
  measurement: by it the matrix form wins at every bucket (2.1 vs 16.8 ms at G = 8, B = 4096)."""
  from benchmarks import _roofline

  pairs, q, c_pad = 256, 512, blocks.corner_pad(G)
  row = blocks.table_row("tpu", G).config
  gather = blocks.table_row("tpu", G, variant="gather").config
  assert (
    gather.variant == "gather" and blocks.table_row("tpu", G, variant=row.variant).config == row
  )
  est = _roofline.spline_tpu_forward_estimates(b, pairs, q, G, c_pad, row.fwd_bb, gather.fwd_bb)
  assert row.variant == _roofline.spline_tpu_choice(
    b, pairs, q, G, c_pad, row.fwd_bb, gather.fwd_bb
  ), est
  if (b, G) == (4096, 8):
    assert est["portable"] == (pytest.approx(2.09e-3, rel=0.01), "compute"), est
    assert est["gather"] == (pytest.approx(16.8e-3, rel=0.01), "xlane"), est
