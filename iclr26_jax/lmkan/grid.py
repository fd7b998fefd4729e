"""The lmKAN sigma grid — a re-export of `kernels_pallas.spline_lookup.grid`.

lmKAN (Pozdnyakov & Schwaller, ICLR 2026; reference code github.com/schwallergroup/lmkan). The grid is
defined next to the lookup kernels, which may import only JAX; this module keeps the package's import path
(`iclr26_jax.lmkan.grid`) so the layer, penalty, refinement and their tests share the one definition.
See the kernel module for the math (Laplace-CDF nodes, linearly extrapolated outer nodes, O(1) cells,
unclamped local coordinates).
"""

from kernels_pallas.spline_lookup.grid import (
  SigmaGrid,
  laplace_cdf,
  laplace_icdf,
  out_of_grid_fraction,
  validate_grid_size,
)

__all__ = [
  "SigmaGrid",
  "laplace_cdf",
  "laplace_icdf",
  "validate_grid_size",
  "out_of_grid_fraction",
]
