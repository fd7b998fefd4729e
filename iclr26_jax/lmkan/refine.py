"""Exact grid refinement G → m·G of lmKAN tables.

lmKAN (Pozdnyakov & Schwaller, ICLR 2026; reference code github.com/schwallergroup/lmkan). Holds
`refinement_matrix`, `refine_table` and `refine_grid`. Every node of the G grid is a node of the m·G
grid, so the fine table T' = H · T · Hᵀ (H the (mG+1, G+1) hat matrix of the fine nodes on the
coarse grid) reproduces the coarse function everywhere, extrapolation included. After refining,
rebuild the model with `grid_size = m·G`, re-initialise the optimiser state of the refined tables
(their shapes change) and re-tune λ (the penalty's scale depends on G).

Why it is exact: docs/methods/lmkan.md ("The algorithm").
"""

from __future__ import annotations

import functools
import numbers

import jax
import jax.numpy as jnp
import numpy as np

from iclr26_jax.lmkan.grid import SigmaGrid

__all__ = ["refinement_matrix", "refine_table", "refine_grid"]


def _check_factor(factor) -> int:
  if isinstance(factor, bool) or not isinstance(factor, numbers.Integral) or factor < 1:
    raise ValueError(f"factor must be a positive integer, got {factor!r}.")
  return int(factor)


@functools.lru_cache(maxsize=None)
def _refinement_matrix(grid_size: int, factor: int) -> np.ndarray:
  coarse = SigmaGrid(grid_size)
  fine = SigmaGrid(grid_size * factor)
  t, r = coarse.nodes, coarse.inv_widths
  h = np.zeros((fine.G + 1, coarse.G + 1), np.float64)
  for i, x in enumerate(fine.nodes):
    # Exact integer cell assignment of fine node i (it lies in coarse cell ⌊i/m⌋, or in the linear
    # continuation of an outer cell); no floating point σ(x) is needed for nodes.
    c = min(max(i // factor, 0), coarse.G - 1)
    d = (x - t[c]) * r[c]
    h[i, c] += 1.0 - d
    h[i, c + 1] += d
  h.setflags(write=False)
  return h


def refinement_matrix(grid_size: int, factor: int = 2) -> np.ndarray:
  """float64 hat matrix H (m·G+1, G+1): H[i', k] = coarse hat function k evaluated at fine node t'_{i'}.

  Args:
    grid_size: coarse G ≥ 3.
    factor: m ≥ 1.
  Returns:
    read-only numpy array (m·G+1, G+1); rows sum to 1 and reproduce linear functions.
  """
  SigmaGrid(grid_size)  # validates grid_size
  return _refinement_matrix(int(grid_size), _check_factor(factor))


def refine_table(table, factor: int = 2):
  """Refines one table exactly: (P, G+1, G+1, Q) → (P, m·G+1, m·G+1, Q).

  Args:
    table: (P, G+1, G+1, Q) float32/float64 (G read from the shape).
    factor: integer m ≥ 1.
  Returns:
    the fine table, same dtype; the layer with `grid_size = m·G` computes the same function.
  """
  table = jnp.asarray(table)
  if table.ndim != 4 or table.shape[1] != table.shape[2]:
    raise ValueError(f"table must have shape (P, G+1, G+1, Q), got {tuple(table.shape)}.")
  h = jnp.asarray(refinement_matrix(table.shape[1] - 1, factor), table.dtype)
  return jnp.einsum("ai,pijq,bj->pabq", h, table, h, precision=jax.lax.Precision.HIGHEST)


def refine_grid(params, factor: int = 2):
  """Refines every lmKAN table (leaves named `table`, shape (P, G+1, G+1, Q)) in a parameter tree.

  Args:
    params: pytree (e.g. a Flax `params` collection); other leaves are returned unchanged.
    factor: integer m ≥ 1.
  Returns:
    a pytree of the same structure with refined tables. Use it with a model built with
    `grid_size = m·G` and a freshly initialised optimiser state.
  Raises:
    ValueError if the tree holds no lmKAN table.
  """
  factor = _check_factor(factor)
  found = []

  def visit(path, leaf):
    key = getattr(path[-1], "key", getattr(path[-1], "name", None)) if path else None
    if key == "table" and getattr(leaf, "ndim", 0) == 4 and leaf.shape[1] == leaf.shape[2]:
      found.append(jax.tree_util.keystr(path))
      return refine_table(leaf, factor)
    return leaf

  out = jax.tree_util.tree_map_with_path(visit, params)
  if not found:
    raise ValueError(
      "params holds no lmKAN table (no leaf named 'table' of shape (P, G+1, G+1, Q))."
    )
  return out
