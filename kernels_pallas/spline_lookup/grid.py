"""The static non-uniform "sigma grid" of lmKAN.

lmKAN (Pozdnyakov & Schwaller, "lookup multivariate Kolmogorov-Arnold Networks", ICLR 2026; reference
implementation github.com/schwallergroup/lmkan, PyTorch + CUDA) evaluates every 2-D function on a grid
whose nodes are the percentiles of the Laplace(0, 1) distribution:

* warp   σ(x) = Laplace(0, 1) CDF = ½eˣ (x ≤ 0), 1 − ½e^{−x} (x > 0), computed from exp(−|x|);
* nodes  t_k = σ⁻¹(k/G) for k = 1..G−1, outer nodes linearly extrapolated:
         t_0 = 2t_1 − t_2, t_G = 2t_{G−1} − t_{G−2}  (so G ≥ 3; for G ≥ 4, t_0 = −ln G, t_G = ln G);
* cell   c(x) = clamp(⌊G·σ(x)⌋, 0, G−1)   (uniform in σ-space, O(1), no search);
* local  δ(x) = (x − t_c)·r_c with r_c = 1/(t_{c+1} − t_c), **not clamped** (linear extrapolation
         outside [t_0, t_G]).

Nodes and inverse widths are built once on the host in float64 (the single source of truth for the layer,
the penalty, refinement and kernels) and cast to the compute dtype where used.

This module lives in `kernels_pallas.spline_lookup` because the kernels may import only JAX (and NumPy);
`iclr26_jax.lmkan.grid` re-exports it unchanged.
"""

from __future__ import annotations

import dataclasses
import functools
import numbers

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
  "SigmaGrid",
  "laplace_cdf",
  "laplace_icdf",
  "validate_grid_size",
  "out_of_grid_fraction",
]


def validate_grid_size(grid_size, name: str = "grid_size") -> int:
  """Checks that `grid_size` (G, the number of intervals per axis) is an integer ≥ 3 and returns it.

  Raises:
    ValueError: naming `name` when G is not an integer or G < 3 (the outer nodes are extrapolated from
      two interior nodes, so at least two interior nodes t_1, t_2 are needed).
  """
  if isinstance(grid_size, bool) or not isinstance(grid_size, numbers.Integral):
    raise ValueError(
      f"{name} must be an integer >= 3 (intervals per axis), got {grid_size!r} "
      f"of type {type(grid_size).__name__}."
    )
  grid_size = int(grid_size)
  if grid_size < 3:
    raise ValueError(
      f"{name} must be >= 3 (the outer nodes t_0 = 2t_1 - t_2 and t_G = 2t_(G-1) - "
      f"t_(G-2) need two interior nodes; G >= 4 is recommended), got {grid_size}."
    )
  return grid_size


def laplace_cdf(x):
  """Laplace(0, 1) CDF σ(x), elementwise, any shape; computed from e = exp(−|x|) (one exp, no overflow).

  Args:
    x: array of any shape, floating.
  Returns:
    array of x's shape and dtype with values in [0, 1].
  """
  x = jnp.asarray(x)
  if not jnp.issubdtype(x.dtype, jnp.floating):
    raise ValueError(f"x must be a floating array, got dtype {x.dtype}.")
  e = jnp.exp(-jnp.abs(x))
  return jnp.where(x <= 0, 0.5 * e, 1.0 - 0.5 * e)


def laplace_icdf(u):
  """Inverse Laplace(0, 1) CDF σ⁻¹(u) = ln(2u) (u ≤ ½), −ln(2(1 − u)) (u > ½), elementwise.

  Args:
    u: array of any shape with values in (0, 1) (0 and 1 map to ∓inf).
  Returns:
    array of u's shape.
  """
  u = jnp.asarray(u)
  if not jnp.issubdtype(u.dtype, jnp.floating):
    u = u.astype(jnp.result_type(float))
  # Both branches are evaluated by `where`; keep their arguments in the valid range to avoid NaNs.
  lo = jnp.log(2.0 * jnp.minimum(u, 0.5))
  hi = -jnp.log(2.0 * (1.0 - jnp.maximum(u, 0.5)))
  return jnp.where(u <= 0.5, lo, hi)


@functools.lru_cache(maxsize=None)
def _host_nodes(grid_size: int) -> np.ndarray:
  """float64 nodes t_0..t_G (read-only) for G = grid_size ≥ 3."""
  g = grid_size
  t = np.empty(g + 1, dtype=np.float64)
  for k in range(1, g):
    # t_k = ln(2k/G) below the median, −ln(2(G−k)/G) above it: the same expression for k and G−k, so the
    # grid is exactly antisymmetric (t_k = −t_{G−k}) in floating point as well.
    if 2 * k <= g:
      t[k] = np.log(2.0 * k / g)
    else:
      t[k] = -np.log(2.0 * (g - k) / g)
  t[0] = 2.0 * t[1] - t[2]
  t[g] = 2.0 * t[g - 1] - t[g - 2]
  t.setflags(write=False)
  return t


@functools.lru_cache(maxsize=None)
def _host_inv_widths(grid_size: int) -> np.ndarray:
  """float64 inverse cell widths r_k = 1/(t_{k+1} − t_k), k = 0..G−1 (read-only)."""
  r = 1.0 / np.diff(_host_nodes(grid_size))
  r.setflags(write=False)
  return r


@dataclasses.dataclass(frozen=True)
class SigmaGrid:
  """The lmKAN sigma grid with G intervals per axis. Frozen and hashable: only G is static.

  It can therefore be passed through `nondiff_argnums` of a `jax.custom_vjp` and used as a static
  argument of `jax.jit`. All arrays are derived from G on demand.

  Attributes:
    G: intervals per axis (the reference calls it `num_grids`); G ≥ 3, G ≥ 4 recommended.
  """

  G: int

  def __post_init__(self):
    object.__setattr__(self, "G", validate_grid_size(self.G, "G"))

  # ---- host-side float64 arrays (the single source of truth) ----
  @property
  def nodes(self) -> np.ndarray:
    """float64 numpy array (G+1,): t_0..t_G, outer nodes linearly extrapolated."""
    return _host_nodes(self.G)

  @property
  def inv_widths(self) -> np.ndarray:
    """float64 numpy array (G,): r_k = 1/(t_{k+1} − t_k)."""
    return _host_inv_widths(self.G)

  @property
  def widths(self) -> np.ndarray:
    """float64 numpy array (G,): h_k = t_{k+1} − t_k."""
    return np.diff(self.nodes)

  # ---- traced helpers ----
  def sigma(self, x):
    """σ(x), the Laplace(0, 1) CDF, elementwise (same shape and dtype as x)."""
    return laplace_cdf(x)

  def sigma_inv(self, u):
    """σ⁻¹(u), the inverse Laplace(0, 1) CDF, elementwise (same shape as u)."""
    return laplace_icdf(u)

  def cell_index(self, x):
    """Cell c(x) = clamp(⌊G·σ(x)⌋, 0, G−1), int32, same shape as x (floating, any shape)."""
    x = jnp.asarray(x)
    s = laplace_cdf(x)
    c = jnp.floor(self.G * s).astype(jnp.int32)
    return jnp.clip(c, 0, self.G - 1)

  def cell_and_delta(self, x):
    """Cell index and unclamped local coordinate of every element of x.

    Args:
      x: floating array of any shape.
    Returns:
      (c, δ): c int32 of x's shape, c = clamp(⌊G·σ(x)⌋, 0, G−1); δ of x's shape and dtype,
      δ = (x − t_c)·r_c, not clamped (δ < 0 or δ > 1 outside [t_0, t_G]).
    """
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
      raise ValueError(f"x must be a floating array, got dtype {x.dtype}.")
    c = self.cell_index(x)
    t = jnp.asarray(self.nodes, x.dtype)
    r = jnp.asarray(self.inv_widths, x.dtype)
    delta = (x - t[c]) * r[c]
    return c, delta

  def node_array(self, dtype=jnp.float32):
    """Nodes t_0..t_G as a jnp array (G+1,) of `dtype`."""
    return jnp.asarray(self.nodes, dtype)

  def inv_width_array(self, dtype=jnp.float32):
    """Inverse widths r_0..r_{G−1} as a jnp array (G,) of `dtype`."""
    return jnp.asarray(self.inv_widths, dtype)


def out_of_grid_fraction(x, grid: SigmaGrid):
  """Fraction of entries of x outside [t_0, t_G] (the extrapolation region), a scalar.

  Logged per layer as `lmkan/out_of_grid_frac`; a large value means the inputs are not normalised.

  Args:
    x: floating array of any shape.
    grid: the SigmaGrid.
  Returns:
    float scalar in [0, 1] (dtype of x).
  """
  if not isinstance(grid, SigmaGrid):
    raise ValueError(f"grid must be a SigmaGrid, got {type(grid).__name__}.")
  x = jnp.asarray(x)
  if not jnp.issubdtype(x.dtype, jnp.floating):
    raise ValueError(f"x must be a floating array, got dtype {x.dtype}.")
  lo, hi = float(grid.nodes[0]), float(grid.nodes[-1])
  outside = jnp.logical_or(x < lo, x > hi)
  return jnp.mean(outside.astype(x.dtype))


# Make SigmaGrid usable where jax expects hashable static data (it already is: a frozen dataclass).
jax.tree_util.register_static(SigmaGrid)
