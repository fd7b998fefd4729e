"""The lmKAN sigma grid — a re-export of `kernels_pallas.spline_lookup.grid`.

lmKAN (Pozdnyakov & Schwaller, ICLR 2026; reference code github.com/schwallergroup/lmkan). The grid
is defined next to the lookup kernels, which may import only JAX; this import path keeps the one
definition for the layer, penalty, refinement and their tests. The math (Laplace-CDF nodes, linearly
extrapolated outer nodes, O(1) cells, unclamped local coordinates):
docs/methods/lmkan.md ("The algorithm").
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
