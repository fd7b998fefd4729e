"""Known-answer tests of the pure-jnp lmKAN lookup (gather form, dense hat-matrix form and the
closed-form custom_vjp): affine tables give a linear layer, node values are interpolated exactly,
the forms agree, input and table gradients are exact, and far outside the grid the output stays
finite and linear.

Exact properties are checked in float64. Tolerances: the quantities compared are sums of a few dozen
products of O(1–50) numbers, so float64 rounding is ~1e-14 relative; 1e-10 leaves ample slack while any
real formula error (a wrong node, a clamp, a wrong weight) is O(1e-2) or larger.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.lmkan.grid import SigmaGrid
from iclr26_jax.lmkan.layer import affine_table
from iclr26_jax.lmkan.reference import (
  spline_lookup_xla,
  spline_lookup_dense,
  spline_lookup_gather,
  spline_lookup_vjp,
)

B, P, Q, G = 6, 5, 3, 8
RTOL = 1e-10


# One jitted program per purpose, reused across tests with the same shapes, keeps compile time low
# (SigmaGrid is a static pytree, so it can be passed as an ordinary argument).
@jax.jit
def _three_forms(x, table, grid):
  return (
    spline_lookup_xla(x, table, grid),
    spline_lookup_gather(x, table, grid),
    spline_lookup_dense(x, table, grid),
  )


@jax.jit
def _three_grads(x, table, c, grid):
  out = []
  for f in (spline_lookup_xla, spline_lookup_gather, spline_lookup_dense):
    out.append(
      jax.grad(lambda xx, tt: jnp.sum(jnp.sin(f(xx, tt, grid)) * c), argnums=(0, 1))(x, table)
    )
  return out


_vjp = jax.jit(spline_lookup_vjp, static_argnames=("chunk_pairs",))


@pytest.fixture(autouse=True)
def _x64():
  with jax.enable_x64(True):
    yield


def _random(seed, b=B, p=P, q=Q, g=G, scale=3.0):
  rng = np.random.default_rng(seed)
  x = jnp.asarray(rng.standard_normal((b, p, 2)) * scale)
  t = jnp.asarray(rng.standard_normal((p, g + 1, g + 1, q)))
  return x, t


def _interior_points(grid, b, p, seed):
  """Inputs whose cells are random and whose local coordinates lie in [0.2, 0.8] (away from borders);
  the two outer cells also get points far outside the grid (δ ∈ [−20, 0.8] / [0.2, 21])."""
  rng = np.random.default_rng(seed)
  t, h = grid.nodes, grid.widths
  c = rng.integers(0, grid.G, size=(b, p, 2))
  d = rng.uniform(0.2, 0.8, size=(b, p, 2))
  far = rng.uniform(0.0, 1.0, size=(b, p, 2)) < 0.3
  d = np.where(far & (c == 0), rng.uniform(-20.0, 0.8, size=d.shape), d)
  d = np.where(far & (c == grid.G - 1), rng.uniform(0.2, 21.0, size=d.shape), d)
  return jnp.asarray(t[c] + d * h[c])


def test_affine_tables_reproduce_linear_layer_far_outside_grid():
  # Inputs N(0, 10²): most lie outside [t_0, t_G] = [−ln 8, ln 8].
  grid = SigmaGrid(G)
  rng = np.random.default_rng(1)
  n_in = 2 * P
  w = rng.standard_normal((Q, n_in))
  bias = rng.standard_normal(Q)
  x = rng.standard_normal((B, n_in)) * 10.0
  assert np.mean(np.abs(x) > np.log(G)) > 0.5
  table = affine_table(jnp.asarray(w), grid, jnp.asarray(bias))
  want = x @ w.T + bias
  pairs = jnp.asarray(x.reshape(-1, P, 2))
  for y in _three_forms(pairs, table, grid):
    np.testing.assert_allclose(np.asarray(y), want, rtol=RTOL, atol=RTOL * 30)


def test_node_interpolation_including_outer_nodes():
  # f(t_i, t_j) = T[i, j] for all node pairs, outer nodes included.
  g = 5
  grid = SigmaGrid(g)
  t = grid.nodes
  ii, jj = np.meshgrid(np.arange(g + 1), np.arange(g + 1), indexing="ij")
  x = jnp.asarray(np.stack([t[ii.ravel()], t[jj.ravel()]], -1)[:, None, :])  # (36, 1, 2)
  _, table = _random(2, p=1, q=2, g=g)
  want = np.asarray(table)[0, ii.ravel(), jj.ravel(), :]
  for y in _three_forms(x, table, grid):
    np.testing.assert_allclose(np.asarray(y), want, rtol=RTOL, atol=RTOL)


def test_gather_equals_dense_and_f32_matches_f64_oracle():
  # The two reference forms agree; f32 against the f64 oracle: ~P·4 products of O(1) values, so 1e-5.
  grid = SigmaGrid(G)
  x, table = _random(3)
  custom, gather, dense = _three_forms(x, table, grid)
  np.testing.assert_allclose(np.asarray(gather), np.asarray(dense), rtol=RTOL, atol=RTOL)
  np.testing.assert_allclose(np.asarray(custom), np.asarray(dense), rtol=RTOL, atol=RTOL)
  for y32 in _three_forms(x.astype(jnp.float32), table.astype(jnp.float32), grid):
    assert y32.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(y32), np.asarray(dense), rtol=1e-5, atol=1e-5)


def test_chunked_pairs_equal_unchunked():
  # chunk_pairs=2 with P = 5 exercises the scan / lax.map paths including the zero-padded last chunk.
  grid = SigmaGrid(G)
  x, table = _random(4)
  g = jnp.asarray(np.random.default_rng(5).standard_normal((B, Q)))
  chunked = jax.jit(lambda xx, tt: spline_lookup_gather(xx, tt, grid, chunk_pairs=2))(x, table)
  np.testing.assert_allclose(
    np.asarray(chunked), np.asarray(_three_forms(x, table, grid)[2]), rtol=RTOL, atol=RTOL
  )
  dx_c, dt_c = _vjp(x, table, grid, g, chunk_pairs=2)
  dx, dt = _vjp(x, table, grid, g)
  np.testing.assert_allclose(np.asarray(dx_c), np.asarray(dx), rtol=RTOL, atol=RTOL)
  np.testing.assert_allclose(np.asarray(dt_c), np.asarray(dt), rtol=RTOL, atol=RTOL)


def test_custom_vjp_matches_autodiff_of_dense_and_gather_forms():
  # The closed-form backward vs plain autodiff through two independent forward formulations, at points
  # away from cell borders (gradients are one-sided on grid lines).
  grid = SigmaGrid(G)
  _, table = _random(6)
  x = _interior_points(grid, B, P, 7)
  c = jnp.asarray(np.random.default_rng(8).standard_normal((B, Q)))
  (gx, gt), *autodiff = _three_grads(x, table, c, grid)
  for ax, at in autodiff:
    np.testing.assert_allclose(np.asarray(gx), np.asarray(ax), rtol=RTOL, atol=RTOL)
    np.testing.assert_allclose(np.asarray(gt), np.asarray(at), rtol=RTOL, atol=RTOL)


def test_input_gradient_vs_finite_differences_and_closed_form():
  # Inside a cell f is bilinear, i.e. linear in each coordinate separately, so a central difference
  # with a step far smaller than the distance to the cell border (≥ 0.2 cell widths ≥ 0.04) is exact up
  # to rounding: error ≈ |f|·1e-16/eps ≈ 1e-10 for eps = 1e-6, hence atol 1e-8.
  grid = SigmaGrid(G)
  _, table = _random(9)
  x = _interior_points(grid, B, P, 10)
  g = jnp.asarray(np.random.default_rng(11).standard_normal((B, Q)))
  dx, _ = _vjp(x, table, grid, g)
  eps = 1e-6
  n = x.size
  pert = jnp.eye(n).reshape((n,) + x.shape) * eps  # one perturbation per input coordinate
  f = jax.jit(jax.vmap(lambda xx: jnp.sum(spline_lookup_gather(xx, table, grid) * g)))
  fd = (np.asarray(f(x[None] + pert)) - np.asarray(f(x[None] - pert))) / (2 * eps)
  np.testing.assert_allclose(np.asarray(dx), fd.reshape(x.shape), rtol=0, atol=1e-8)
  # The closed form of the input gradient written out per (sample, pair, output) with numpy loops.
  t, r = grid.nodes, grid.inv_widths
  sigma = lambda v: 0.5 * np.exp(v) if v <= 0 else 1 - 0.5 * np.exp(-v)  # Laplace(0, 1) CDF
  xn, tn, gn = np.asarray(x), np.asarray(table), np.asarray(g)
  want = np.zeros(x.shape)
  for b in range(B):
    for p in range(P):
      c1, c2 = (int(np.clip(np.floor(grid.G * sigma(v)), 0, grid.G - 1)) for v in xn[b, p])
      d1 = (xn[b, p, 0] - t[c1]) * r[c1]
      d2 = (xn[b, p, 1] - t[c2]) * r[c2]
      t00, t01 = tn[p, c1, c2], tn[p, c1, c2 + 1]
      t10, t11 = tn[p, c1 + 1, c2], tn[p, c1 + 1, c2 + 1]
      want[b, p, 0] = gn[b] @ (r[c1] * ((1 - d2) * (t10 - t00) + d2 * (t11 - t01)))
      want[b, p, 1] = gn[b] @ (r[c2] * ((1 - d1) * (t01 - t00) + d1 * (t11 - t10)))
  np.testing.assert_allclose(np.asarray(dx), want, rtol=RTOL, atol=RTOL)


def test_table_gradient_is_exact_because_output_is_linear_in_table():
  # For a loss linear in y, L(T + E) − L(T) = ⟨∇_T L, E⟩ exactly (up to float64 rounding).
  grid = SigmaGrid(G)
  x, table = _random(12)
  rng = np.random.default_rng(13)
  c = jnp.asarray(rng.standard_normal((B, Q)))
  e = jnp.asarray(rng.standard_normal(table.shape))
  y0 = _three_forms(x, table, grid)[0]
  y_e = _three_forms(x, table + e, grid)[0]
  _, dt = _vjp(x, table, grid, c)
  lhs = float(np.sum((np.asarray(y_e) - np.asarray(y0)) * np.asarray(c)))
  rhs = float(np.sum(np.asarray(dt) * np.asarray(e)))
  assert lhs == pytest.approx(rhs, rel=RTOL, abs=RTOL)
  # Only the 4 corners of each (sample, pair) cell get gradient: untouched entries are exactly zero.
  touched = np.zeros(table.shape[:3], bool)
  cells = np.asarray(jax.jit(grid.cell_index)(x))
  cells = [cells[..., 0], cells[..., 1]]
  for b in range(B):
    for p in range(P):
      c1, c2 = cells[0][b, p], cells[1][b, p]
      touched[p, c1 : c1 + 2, c2 : c2 + 2] = True
  assert np.all(np.asarray(dt)[~touched] == 0.0)


def test_large_inputs_stay_finite_and_extrapolate_linearly():
  # Far outside the grid f is one bilinear piece, hence linear in each coordinate separately:
  # moving x1 alone (pair 0) or x2 alone (pair 1) along 50, 60, 70 gives f(50) + f(70) − 2 f(60) = 0, and
  # no saturation (f(60) ≠ f(50) for random tables). Checked in float32 (the production dtype); values
  # are O(70·|T|·r) ≈ 1e3, so the second difference is zero to ~1e3·1e-6 → atol 1e-2.
  grid = SigmaGrid(G)
  _, table = _random(14)
  table = table.astype(jnp.float32)
  ys = []
  for s_ in (50.0, 60.0, 70.0):
    x = np.full((B, P, 2), 0.3, np.float32)
    x[:, 0] = [s_, -45.0]
    x[:, 1] = [-55.0, -s_]
    ys.append(np.asarray(_three_forms(jnp.asarray(x), table, grid)[0]))
  np.testing.assert_allclose(ys[0] + ys[2] - 2 * ys[1], 0.0, atol=1e-2)
  assert np.all(np.abs(ys[1] - ys[0]) > 1e-1)
  # |x| = 50 in every coordinate and sign combination: outputs and gradients finite.
  signs = np.random.default_rng(15).choice([-1.0, 1.0], size=(B, P, 2)).astype(np.float32)
  x50 = jnp.asarray(50.0 * signs)
  assert np.all(np.isfinite(np.asarray(_three_forms(x50, table, grid)[0])))
  gx, gt = jax.jit(
    jax.grad(lambda xx, tt: jnp.sum(spline_lookup_xla(xx, tt, grid)), argnums=(0, 1))
  )(x50, table)
  assert np.all(np.isfinite(np.asarray(gx))) and np.all(np.isfinite(np.asarray(gt)))


def test_invalid_shapes_and_dtypes_raise_clear_errors():
  grid = SigmaGrid(4)
  x = jnp.zeros((3, 2, 2))
  good = jnp.zeros((2, 5, 5, 1))
  with pytest.raises(ValueError, match=r"x must have shape \(B, P, 2\)"):
    spline_lookup_xla(jnp.zeros((3, 2, 3)), good, grid)
  with pytest.raises(ValueError, match=r"table must have shape .*\(2, 5, 5, Q\)"):
    spline_lookup_xla(x, jnp.zeros((2, 6, 6, 1)), grid)
  with pytest.raises(ValueError, match=r"table must have shape"):
    spline_lookup_xla(x, jnp.zeros((3, 5, 5, 1)), grid)
  with pytest.raises(ValueError, match="same dtype"):
    spline_lookup_xla(x.astype(jnp.float32), good, grid)
  with pytest.raises(ValueError, match="x must be float32, float64, bfloat16 or float16"):
    spline_lookup_xla(x.astype(jnp.int32), good.astype(jnp.int32), grid)
  with pytest.raises(ValueError, match="grid must be a SigmaGrid"):
    spline_lookup_xla(x, good, 4)
  with pytest.raises(ValueError, match=r"g must have shape \(B, Q\)"):
    spline_lookup_vjp(x, good, grid, jnp.zeros((3, 2)))
