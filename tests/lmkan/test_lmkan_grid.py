"""lmKAN's sigma grid: its nodes (symmetry, outer nodes, the G = 10 values, the G = 3 rule), cell
lookup, the Laplace CDF and its samples, the out-of-grid fraction, and grid-size validation."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from iclr26_jax.lmkan.grid import SigmaGrid, laplace_cdf, laplace_icdf, out_of_grid_fraction


@pytest.fixture(autouse=True)
def _x64():
  with jax.enable_x64(True):
    yield


@pytest.mark.parametrize("g", [3, 4, 5, 8, 10, 26])
def test_grid_symmetry_and_outer_nodes(g):
  t = SigmaGrid(g).nodes
  assert t.shape == (g + 1,) and t.dtype == np.float64
  # Exact antisymmetry (both halves use the same expression, so no rounding slack is needed).
  np.testing.assert_array_equal(t, -t[::-1])
  assert np.all(np.diff(t) > 0)
  # Outer nodes are linear extrapolations of the two nearest interior nodes.
  assert t[0] == pytest.approx(2 * t[1] - t[2], abs=1e-15)
  assert t[g] == pytest.approx(2 * t[g - 1] - t[g - 2], abs=1e-15)
  # Interior nodes are Laplace(0, 1) percentiles: σ(t_k) = k/G (float64 rounding only), with σ written
  # out independently in numpy.
  ti = t[1:-1]
  cdf = np.where(ti <= 0, 0.5 * np.exp(ti), 1 - 0.5 * np.exp(-ti))
  np.testing.assert_allclose(cdf, np.arange(1, g) / g, rtol=0, atol=1e-15)
  if g >= 4:
    assert t[0] == pytest.approx(-math.log(g), abs=1e-14)
    assert t[g] == pytest.approx(math.log(g), abs=1e-14)
    assert t[1] - t[0] == pytest.approx(math.log(2.0), abs=1e-14)
  if g % 2 == 0:
    assert t[g // 2] == 0.0
  np.testing.assert_allclose(SigmaGrid(g).inv_widths, 1.0 / np.diff(t), rtol=1e-15)


def test_grid_g10_node_values():
  # The G = 10 nodes to 4 decimals: 0, ±ln 1.25, ±ln(5/3), ±ln 2.5, ±ln 5, ±ln 10.
  want = [-2.3026, -1.6094, -0.9163, -0.5108, -0.2231, 0.0, 0.2231, 0.5108, 0.9163, 1.6094, 2.3026]
  np.testing.assert_allclose(SigmaGrid(10).nodes, want, atol=5e-5)


def test_grid_g3_extrapolation_rule():
  # G = 3: t_1 = ln(2/3), t_2 = −ln(2/3); t_0 = 2t_1 − t_2 = 3 ln(2/3) (not −ln 3).
  t = SigmaGrid(3).nodes
  np.testing.assert_allclose(
    t, [3 * math.log(2 / 3), math.log(2 / 3), -math.log(2 / 3), -3 * math.log(2 / 3)], rtol=1e-14
  )


def test_cell_index_and_local_coordinate():
  g = SigmaGrid(8)
  t = g.nodes
  mids = (t[:-1] + t[1:]) / 2
  x = jnp.asarray(np.concatenate([mids, [-50.0, 50.0, -1e4, 1e4]]))
  c, d = jax.jit(g.cell_and_delta)(x)
  np.testing.assert_array_equal(np.asarray(c), list(range(8)) + [0, 7, 0, 7])
  np.testing.assert_allclose(np.asarray(d[:8]), 0.5, atol=1e-14)
  # Unclamped: far left δ = (x − t_0)/h_0 < 0, far right δ > 1 (linear extrapolation, no saturation).
  np.testing.assert_allclose(float(d[8]), (-50.0 - t[0]) / (t[1] - t[0]), rtol=1e-14)
  np.testing.assert_allclose(float(d[9]), (50.0 - t[7]) / (t[8] - t[7]), rtol=1e-14)
  assert np.all(np.isfinite(np.asarray(d)))


def test_laplace_cdf_inverse_and_no_overflow():
  u = jnp.linspace(0.01, 0.99, 37)
  np.testing.assert_allclose(
    np.asarray(jax.jit(lambda v: laplace_cdf(laplace_icdf(v)))(u)), np.asarray(u), atol=1e-14
  )
  big = jax.jit(laplace_cdf)(jnp.asarray([-1e5, 1e5], jnp.float32))
  np.testing.assert_array_equal(np.asarray(big), [0.0, 1.0])


def test_laplace_samples_fill_cells_uniformly():
  # Goodness of fit: Laplace(0, 1) samples land in the G cells uniformly (the grid is its percentile
  # grid). Chi-square with G−1 dof; p > 1e-4 fails by chance 1 in 10⁴ runs (the seed is fixed anyway).
  # Negative control: N(0, 1) samples are far from uniform (cells hold 8–16% at G = 8) and must fail.
  g = SigmaGrid(8)
  rng = np.random.default_rng(0)
  n = 40000
  cells = jax.jit(g.cell_index)
  counts = np.bincount(np.asarray(cells(jnp.asarray(rng.laplace(size=n)))), minlength=8)
  assert stats.chisquare(counts).pvalue > 1e-4
  gauss = np.bincount(np.asarray(cells(jnp.asarray(rng.standard_normal(n)))), minlength=8)
  assert stats.chisquare(gauss).pvalue < 1e-10


def test_out_of_grid_fraction():
  g = SigmaGrid(4)
  x = jnp.asarray([-10.0, -1.0, 0.0, 1.0, 1.5, 10.0])  # t_0 = −ln 4 ≈ −1.386, t_4 ≈ 1.386
  assert float(out_of_grid_fraction(x, g)) == pytest.approx(3 / 6)


@pytest.mark.parametrize("bad", [2, 0, -4, 2.5, True, "8", None])
def test_invalid_grid_size_raises(bad):
  with pytest.raises(ValueError, match="G"):
    SigmaGrid(bad)


def test_grid_is_hashable_static():
  assert SigmaGrid(8) == SigmaGrid(8) and hash(SigmaGrid(8)) == hash(SigmaGrid(8))
  assert SigmaGrid(8) != SigmaGrid(9)
  assert jax.tree_util.tree_leaves(SigmaGrid(8)) == []
