"""Tier 0 for the lmKAN spline lookup: the pure-jnp references agree with each other and with the
closed-form backward (lmKAN, Pozdnyakov & Schwaller, ICLR 2026; github.com/schwallergroup/lmkan).

float64, so the two formulations (corner gathers vs dense hat-matrix contraction) and the two
backwards (closed-form custom_vjp vs autodiff through the hat-matrix form) must agree to rounding,
~1e-12 of the largest value; inputs include samples far outside the grid (linear extrapolation) and a
grid size G = 3 (the minimum, with its own outer-node rule). The method package's modules re-export
these exact objects (one definition).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kernels_pallas.spline_lookup import reference as ref
from kernels_pallas.spline_lookup.grid import SigmaGrid


@pytest.mark.parametrize("G", [3, 8])
def test_gather_dense_and_closed_form_backward_agree(G):
  grid = SigmaGrid(G)
  rng = np.random.default_rng(G)
  with jax.enable_x64(True):
    x = jnp.asarray(rng.standard_normal((11, 3, 2)) * 6.0)  # many |x| > ln G
    table = jnp.asarray(rng.standard_normal((3, G + 1, G + 1, 5)))
    g = jnp.asarray(rng.standard_normal((11, 5)))

    @jax.jit
    def run(x, table, g):
      y_gather = ref.spline_lookup_gather(x, table, grid, chunk_pairs=2)  # chunked scan path
      y_dense, vjp_dense = jax.vjp(lambda a, b: ref.spline_lookup_dense(a, b, grid), x, table)
      _, vjp_closed = jax.vjp(lambda a, b: ref.spline_lookup_xla(a, b, grid), x, table)
      return y_gather, y_dense, vjp_dense(g), vjp_closed(g)

    y_gather, y_dense, (dx_d, dt_d), (dx_c, dt_c) = run(x, table, g)
    for a, b in ((y_gather, y_dense), (dx_c, dx_d), (dt_c, dt_d)):
      np.testing.assert_allclose(
        np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12 * float(np.abs(np.asarray(b)).max())
      )


def test_method_modules_re_export_the_kernel_package():
  from iclr26_jax.lmkan import grid as method_grid
  from iclr26_jax.lmkan import reference as method_ref

  assert method_grid.SigmaGrid is SigmaGrid
  assert method_ref.spline_lookup_xla is ref.spline_lookup_xla
  assert method_ref.spline_lookup_dense is ref.spline_lookup_dense
