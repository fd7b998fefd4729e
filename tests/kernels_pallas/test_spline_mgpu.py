"""The Mosaic GPU lmKAN kernels (`kernel_mgpu.py`): block splits, dispatch and argument checks.

lmKAN (Pozdnyakov & Schwaller, ICLR 2026; github.com/schwallergroup/lmkan). The public op's forward and
gradients in Mosaic GPU interpret mode are in test_spline_kernels.py (case "gpu-mgpu"); here the
kernels are called directly on the shapes that case does not reach, in the same interpret mode
(`plgpu.InterpretGPUParams`, about a millisecond per simulated ref access, so shapes are tiny):

* dT with the corner axis split over blocks (G = 12: 169 corners, C_pad = 256, 64 rows per block, so
  the fourth block lies wholly past the corners and takes the skip branch), two 64-sample chunks of
  the batch walk and two column tiles;
* forward and dx with two column tiles / windows and two staged pair chunks.

Both against the pure-jnp reference (`reference.spline_lookup_xla` / `spline_lookup_vjp`) with the
GPU tolerance of test_spline_kernels.py, 1e-5·(1 + max |reference|): the kernels sum the same f32
products as the reference in another order (measured ≤ 3e-7 of that scale), while a wrong corner,
weight, cell, row split or padding gives O(1) errors. The compile tier builds the same kernels for
sm_90a (test_compile_targets.py).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kernels_pallas import _backend
from kernels_pallas.spline_lookup import blocks
from kernels_pallas.spline_lookup import kernel_mgpu as km
from kernels_pallas.spline_lookup import ops
from kernels_pallas.spline_lookup import reference as ref
from kernels_pallas.spline_lookup.grid import SigmaGrid

TOL = 1e-5


def _close(got, want):
  got, want = np.asarray(got), np.asarray(want)
  assert got.shape == want.shape and np.all(np.isfinite(got))
  err, scale = np.max(np.abs(got - want)), np.max(np.abs(want))
  assert err <= TOL * (1.0 + scale), f"max error {err:.3g} vs scale {scale:.3g}"


def _operands(G, b, p, q, *, b_pad, p_pad, q_pad, seed):
  """Batch-first x (B, P, 2) with samples outside the grid and on nodes, a table and a cotangent,
  and their padded kernel layouts (as `ops._to_kernel_layout`)."""
  rng = np.random.default_rng(seed)
  grid = SigmaGrid(G)
  x = rng.standard_normal((b, p, 2)) * 2.0
  x[:3] = np.array([[grid.nodes[0], grid.nodes[G]], [12.0, -9.0], [grid.nodes[1], 0.0]])[:, None, :]
  x = jnp.asarray(x, jnp.float32)
  table = jnp.asarray(rng.standard_normal((p, G + 1, G + 1, q)), jnp.float32)
  g = jnp.asarray(rng.standard_normal((b, q)), jnp.float32)
  c, c_pad, g1p = (G + 1) ** 2, blocks.corner_pad(G), blocks.node_pad(G)
  xt = jnp.pad(jnp.transpose(x, (1, 2, 0)), ((0, p_pad - p), (0, 0), (0, b_pad - b)))
  tf = jnp.pad(table.reshape(p, c, q), ((0, p_pad - p), (0, c_pad - c), (0, q_pad - q)))
  nodes = jnp.pad(grid.node_array(jnp.float32), (0, g1p - G - 1))
  invw = jnp.pad(grid.inv_width_array(jnp.float32), (0, g1p - G))
  g_pad = jnp.pad(g, ((0, b_pad - b), (0, q_pad - q)))
  return (x, table, g), (xt, tf, nodes, invw, g_pad)


def test_table_gradient_with_split_corner_axis_matches_reference():
  G, b, p, q = 12, 100, 1, 200
  (x, table, g), (xt, _, nodes, invw, g_pad) = _operands(
    G, b, p, q, b_pad=128, p_pad=1, q_pad=256, seed=0
  )
  c, c_pad = (G + 1) ** 2, blocks.corner_pad(G)
  assert (c_pad, c) == (256, 169)  # blocks of rows [0, 64) ... [192, 256): the last is all padding
  dt = jax.jit(
    lambda xt, g: km.mgpu_table_grad(
      xt, g, nodes, invw, G=G, c_pad=c_pad, bq=128, bc=64, interpret=True
    )
  )(xt, g_pad)
  dt = np.asarray(dt)
  assert dt.shape == (1, c_pad, 256)
  assert np.all(dt[:, c:, :] == 0.0)  # padded corner rows, split or not
  assert np.all(dt[:, :, q:] == 0.0)  # padded outputs (zero cotangent)
  _, dt_ref = ref.spline_lookup_vjp(x, table, SigmaGrid(G), g)
  _close(dt[:, :c, :q].reshape(p, G + 1, G + 1, q), dt_ref)


def test_forward_and_input_gradient_over_column_tiles_and_pair_chunks():
  G, b, p, q = 5, 37, 3, 200
  (x, table, g), (xt, tf, nodes, invw, g_pad) = _operands(
    G, b, p, q, b_pad=64, p_pad=4, q_pad=256, seed=1
  )

  @jax.jit
  def run(xt, tf, g_pad):
    y = km.mgpu_forward(xt, tf, nodes, invw, G=G, bb=64, bq=128, pc=2, interpret=True)
    dx = km.mgpu_input_grad(xt, tf, g_pad, nodes, invw, G=G, n_pairs=p, interpret=True)
    return y, dx

  y, dx = run(xt, tf, g_pad)
  assert y.shape == (64, 256) and dx.shape == (p, 2, 64)
  grid = SigmaGrid(G)
  _close(y[:b, :q], ref.spline_lookup_xla(x, table, grid))
  dx_ref, _ = ref.spline_lookup_vjp(x, table, grid, g)
  _close(jnp.transpose(dx[:, :, :b], (2, 0, 1)), dx_ref)


def test_plan_pads_to_the_warpgroup_and_sample_chunk():
  pl_ = blocks.plan("gpu", 26, 37, 3, 20)
  cfg = pl_.config
  assert cfg.variant == "mgpu" and cfg == blocks.table_row("gpu", 26).config  # unclamped
  assert (pl_.b_pad, pl_.q_pad, pl_.p_pad, pl_.c_pad) == (64, 128, 8, 1024)
  assert (cfg.fwd_bq, cfg.fwd_bb, cfg.fwd_bp, cfg.dt_bq, cfg.dt_bc) == (128, 16, 8, 128, 128)
  # BlockSizes' defaults clamped: 64 samples per forward block (2 pairs staged), dt_bc ≤ C_pad.
  wide = blocks.plan("gpu", 8, 5000, 256, 512, blocks.BlockSizes("mgpu", fwd_bq=512, dt_bc=1024))
  assert (wide.config.fwd_bb, wide.config.fwd_bp, wide.config.fwd_bq) == (64, 2, 512)
  assert (wide.config.dt_bc, wide.b_pad, wide.q_pad) == (128, 5056, 512)


@pytest.mark.parametrize(
  "host, capability, impl, want",
  [
    ("gpu", 9.0, "auto", ("pallas", "gpu")),  # Hopper
    ("gpu", 10.0, "auto", ("pallas", "gpu")),  # Blackwell
    ("gpu", 8.0, "auto", ("xla", None)),  # Ampere: not compiled or tested here
    ("gpu", 8.0, "pallas", ("pallas", "gpu")),  # ... unless asked for
    ("gpu", None, "auto", ("xla", None)),
    ("cpu", None, "auto", ("xla", None)),
  ],
)
def test_auto_uses_mosaic_gpu_from_hopper_on(monkeypatch, host, capability, impl, want):
  monkeypatch.setattr(_backend, "backend", lambda: host)
  monkeypatch.setattr(_backend, "gpu_capability", lambda: capability)
  assert ops.resolve_path(impl) == want
  if want[1] == "gpu":
    assert blocks.table_row("gpu", 8).config.variant == "mgpu"  # the kernels "auto" runs


@pytest.mark.parametrize(
  "make, match",
  [
    (lambda: blocks.plan("tpu", 8, 64, 2, 128, blocks.BlockSizes("mgpu")), "needs platform='gpu'"),
    (lambda: blocks.BlockSizes("mgpu", dt_bc=96), "power of two"),
    (
      lambda: km.mgpu_forward(
        jnp.zeros((2, 2, 64)), jnp.zeros((2, 128, 128)), jnp.zeros(16), jnp.zeros(16),
        G=8, bb=16, bq=96, pc=8,
      ),
      "blocks",
    ),
    (
      lambda: km.mgpu_table_grad(
        jnp.zeros((1, 2, 48)), jnp.zeros((48, 128)), jnp.zeros(16), jnp.zeros(16),
        G=8, c_pad=128, bq=128, bc=128,
      ),
      "multiple of 64",
    ),
  ],
)  # fmt: skip
def test_clear_errors(make, match):
  with pytest.raises(ValueError, match=match):
    make()
