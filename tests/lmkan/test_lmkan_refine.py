"""Exact grid refinement G → 2G and G → 3G, through the reference lookup and through a network."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.lmkan.grid import SigmaGrid
from iclr26_jax.lmkan.networks import LMKANNet
from iclr26_jax.lmkan.reference import spline_lookup_xla
from iclr26_jax.lmkan.refine import refine_grid, refine_table, refinement_matrix


@pytest.fixture(autouse=True)
def _x64():
  with jax.enable_x64(True):
    yield


@jax.jit
def _coarse_and_fine(x, table, fine_table, coarse, fine):
  return spline_lookup_xla(x, table, coarse), spline_lookup_xla(x, fine_table, fine)


@pytest.mark.parametrize("g, m", [(4, 2), (5, 3)])
def test_refinement_is_exact_everywhere(g, m):
  # Inputs N(0, 4²): a large share in the extrapolation region. float64; the fine table is a 2-D hat
  # matrix product of O(1) values (rounding ~1e-15), and the compared outputs are sums of 4 corner
  # products per pair, so 1e-10 is ample; any wrong node or cell assignment errs by O(0.1).
  coarse, fine = SigmaGrid(g), SigmaGrid(m * g)
  rng = np.random.default_rng(g)
  table = jnp.asarray(rng.standard_normal((3, g + 1, g + 1, 2)))
  x = jnp.asarray(rng.standard_normal((64, 3, 2)) * 4.0)
  assert np.mean(np.abs(np.asarray(x)) > coarse.nodes[-1]) > 0.3
  fine_table = jax.jit(refine_table, static_argnums=1)(table, m)
  assert fine_table.shape == (3, m * g + 1, m * g + 1, 2)
  y_c, y_f = _coarse_and_fine(x, table, fine_table, coarse, fine)
  np.testing.assert_allclose(np.asarray(y_f), np.asarray(y_c), rtol=1e-10, atol=1e-10)
  # Interior nodes are nested exactly (bitwise, same rational 2k/G).
  np.testing.assert_array_equal(fine.nodes[m : m * g : m], coarse.nodes[1:g])


def test_factor_two_fine_node_one_is_coarse_outer_node():
  for g in (4, 8):
    assert SigmaGrid(2 * g).nodes[1] == pytest.approx(SigmaGrid(g).nodes[0], abs=1e-14)
    assert SigmaGrid(2 * g).nodes[-2] == pytest.approx(SigmaGrid(g).nodes[-1], abs=1e-14)
  h = refinement_matrix(4, 2)
  np.testing.assert_allclose(h.sum(1), 1.0, atol=1e-14)
  np.testing.assert_allclose(h @ SigmaGrid(4).nodes, SigmaGrid(8).nodes, atol=1e-14)


def test_refine_grid_on_network_params_preserves_outputs():
  x = jnp.asarray(np.random.default_rng(0).standard_normal((16, 5)) * 2.0)
  net = LMKANNet((4, 1), grid_size=4, param_dtype=jnp.float64)
  net2 = LMKANNet((4, 1), grid_size=8, param_dtype=jnp.float64)

  @jax.jit  # one compiled program: init, refine, and both forward passes
  def run(key, xx):
    variables = net.init(key, xx)
    refined = refine_grid(variables["params"], 2)
    # Eval mode (running statistics): the BatchNorm is the same affine map in both nets.
    y2 = net2.apply({"params": refined, "batch_stats": variables["batch_stats"]}, xx)
    return net.apply(variables, xx), y2, refined

  # An "rbg" key: threefry's XLA:CPU compile costs seconds and the test does not depend on the PRNG.
  y, y2, refined = run(jax.random.key(0, impl="rbg"), x)
  np.testing.assert_allclose(np.asarray(y2), np.asarray(y), rtol=1e-10, atol=1e-10)
  assert refined["lmkan_0"]["table"].shape == (3, 9, 9, 4)
  assert refined["lmkan_1"]["table"].shape == (2, 9, 9, 1)


def test_refine_errors():
  with pytest.raises(ValueError, match="factor"):
    refine_table(jnp.zeros((1, 5, 5, 1)), 0)
  with pytest.raises(ValueError, match="factor"):
    refine_table(jnp.zeros((1, 5, 5, 1)), 1.5)
  with pytest.raises(ValueError, match="no lmKAN table"):
    refine_grid({"kernel": jnp.zeros((2, 2))})
  with pytest.raises(ValueError, match=r"table must have shape"):
    refine_table(jnp.zeros((5, 5, 1)))
