"""Triton gather kernels of the lmKAN lookup: cost independent of the grid size G.

lmKAN (Pozdnyakov & Schwaller, ICLR 2026; reference CUDA code github.com/schwallergroup/lmkan). The
portable interpolation-matrix kernels cost C_pad/4 times the sparse lookup (×256 at G = 26); on GPU a
pointer gather reads just the four corners. Pallas's Triton backend is deprecated (jax 0.11): these
kernels are an explicit choice (`blocks.table_row("gpu", G, variant="gather")`), never the default,
which is the Mosaic GPU form of the same lookup (`kernel_mgpu.py`). Triton only: integer-array ref
indexing ("Cannot do int indexing on TPU") and `pltriton.atomic_add` do not exist on Mosaic TPU, so
every `pallas_call` here carries `pltriton.CompilerParams`.

Layouts (`ops.py` pads; batch-first output so each program writes a (bb, bq) tile of rows):
  x        (P, 2, B_pad)          pairs, batch last (coalesced row loads);
  table    (P·C_pad, Q_pad)       the (P, C_pad, Q_pad) table flattened (a free reshape): row
                                  p·C_pad + c1·(G+1) + c2 + {0, 1, G+1, G+2} holds the four corners;
  nodes    (G1_pad,), invw (G1_pad,)  t_k and r_k, gathered by cell;
  y, dy    (B_pad, Q_pad).

* forward, grid (B/bb, Q/bq): per pair, cells and weights once per sample (rank-1 (bb,) vectors), then
  four gathers `table[rows, q-window]` (bb, bq) with one integer-array indexer on the flattened ref (a
  `.at[p]` view followed by another index fails on Triton) and four FMAs into the (bb, bq) accumulator;
* input gradient, grid (P, B/bb) (owner-computes): a_uv = Σ_q dy ⊙ T_uv over q windows, then the closed
  form dx1 = r_{c1}[(1−δ2)(a10 − a00) + δ2(a11 − a01)], dx2 = r_{c2}[(1−δ1)(a01 − a00) + δ1(a11 − a10)];
* table gradient with atomics, grid (B/bb, Q/bq) (opt-in; the default is the owner-computes portable
  kernel): for every sample row and pair, four `atomic_add`s of a (bq,) row segment g[b, q-window]·w_uv at
  one table row — each call's index set is duplicate-free, so the result is exact in interpret mode too
  (jax-ml/jax#24117 drops duplicates *inside* one vector atomic). dT must be zeroed outside and aliased
  in (`input_output_aliases`); float atomics are not bitwise deterministic.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pltriton


def _cell_delta(x, n_ref, r_ref, G):
  """(bb,) inputs → cell (int32), unclamped δ and r_c, with t_c and r_c gathered from the node refs."""
  e = jnp.exp(-jnp.abs(x))
  s = jnp.where(x <= 0, 0.5 * e, 1.0 - 0.5 * e)
  c = jnp.clip(jnp.floor(G * s).astype(jnp.int32), 0, G - 1)
  r_c = r_ref[c]
  return c, (x - n_ref[c]) * r_c, r_c


def _gather_fwd_kernel(x_ref, t_ref, n_ref, r_ref, o_ref, *, G, c_pad, n_pairs):
  bb, bq = o_ref.shape

  def pair(p, acc):
    c1, d1, _ = _cell_delta(x_ref[p, 0, :], n_ref, r_ref, G)
    c2, d2, _ = _cell_delta(x_ref[p, 1, :], n_ref, r_ref, G)
    base = p * c_pad + c1 * (G + 1) + c2
    e1, e2 = 1.0 - d1, 1.0 - d2
    for off, w in ((0, e1 * e2), (1, e1 * d2), (G + 1, d1 * e2), (G + 2, d1 * d2)):
      acc = acc + w[:, None] * t_ref[base + off, :]
    return acc

  o_ref[...] = jax.lax.fori_loop(0, n_pairs, pair, jnp.zeros((bb, bq), o_ref.dtype))


def _gather_dx_kernel(x_ref, t_ref, g_ref, n_ref, r_ref, o_ref, *, G, bq):
  bb = x_ref.shape[1]
  n_q = t_ref.shape[1] // bq
  c1, d1, r1 = _cell_delta(x_ref[0, :], n_ref, r_ref, G)
  c2, d2, r2 = _cell_delta(x_ref[1, :], n_ref, r_ref, G)
  base = c1 * (G + 1) + c2

  def window(i, a):
    off = pl.multiple_of(i * bq, bq)
    g = g_ref[:, pl.ds(off, bq)]  # (bb, bq)
    return tuple(
      a_k + jnp.sum(g * t_ref[base + o, pl.ds(off, bq)], axis=1)
      for a_k, o in zip(a, (0, 1, G + 1, G + 2))
    )

  zero = jnp.zeros((bb,), o_ref.dtype)
  a00, a01, a10, a11 = jax.lax.fori_loop(0, n_q, window, (zero,) * 4)
  o_ref[0, :] = r1 * ((1.0 - d2) * (a10 - a00) + d2 * (a11 - a01))
  o_ref[1, :] = r2 * ((1.0 - d1) * (a01 - a00) + d1 * (a11 - a10))


def _atomic_dt_kernel(x_ref, g_ref, n_ref, r_ref, dt_in_ref, dt_ref, *, G, c_pad, n_pairs):
  del dt_in_ref  # aliased with dt_ref (zeroed by the caller)
  bb, bq = g_ref.shape
  q0 = pl.program_id(1) * bq

  def row(b, carry):
    g = g_ref[b, :]  # (bq,) one sample

    def pair(p, carry):
      # Scalar cells and weights of sample b, pair p; four (bq,) row segments at four distinct table
      # rows: no index repeats inside one atomic call.
      c1, d1, _ = _cell_delta(x_ref[p, 0, b], n_ref, r_ref, G)
      c2, d2, _ = _cell_delta(x_ref[p, 1, b], n_ref, r_ref, G)
      base = p * c_pad + c1 * (G + 1) + c2
      e1, e2 = 1.0 - d1, 1.0 - d2
      for off, w in ((0, e1 * e2), (1, e1 * d2), (G + 1, d1 * e2), (G + 2, d1 * d2)):
        pltriton.atomic_add(dt_ref, (base + off, pl.ds(q0, bq)), w * g)
      return carry

    return jax.lax.fori_loop(0, n_pairs, pair, carry)

  jax.lax.fori_loop(0, bb, row, 0)


def gather_forward(
  x, table_flat, nodes, invw, *, G, c_pad, bb, bq, num_warps=4, num_stages=2, interpret=False
):
  """y (B_pad, Q_pad) by four pointer gathers per (sample, pair) and output window.

  Args:
    x: (P, 2, B_pad); table_flat: (P·C_pad, Q_pad); nodes, invw: (G1_pad,); same float dtype.
    G: intervals; c_pad: corner rows per pair in table_flat; bb, bq: powers of two ≥ 16 dividing
      B_pad and Q_pad.
  Returns:
    y: (B_pad, Q_pad).
  """
  p, _, b = x.shape
  q = table_flat.shape[1]
  if table_flat.shape[0] != p * c_pad or b % bb or q % bq:
    raise ValueError(
      f"gather_forward: x {x.shape}, table_flat {table_flat.shape}, c_pad {c_pad}, "
      f"blocks (bb, bq) = {(bb, bq)}"
    )
  g1 = nodes.shape[0]
  itemsize = x.dtype.itemsize
  cost = pl.CostEstimate(
    flops=int(8 * b * p * q + 20 * b * p * (q // bq)),
    transcendentals=int(2 * b * p * (q // bq)),
    bytes_accessed=int(itemsize * (4 * b * p * q + x.size * (q // bq) + b * q)),
  )
  return pl.pallas_call(
    functools.partial(_gather_fwd_kernel, G=G, c_pad=c_pad, n_pairs=p),
    out_shape=jax.ShapeDtypeStruct((b, q), x.dtype),
    grid=(b // bb, q // bq),
    in_specs=[
      pl.BlockSpec((p, 2, bb), lambda i, j: (0, 0, i)),
      pl.BlockSpec((p * c_pad, bq), lambda i, j: (0, j)),
      pl.BlockSpec((g1,), lambda i, j: (0,)),
      pl.BlockSpec((g1,), lambda i, j: (0,)),
    ],
    out_specs=pl.BlockSpec((bb, bq), lambda i, j: (i, j)),
    compiler_params=pltriton.CompilerParams(num_warps=num_warps, num_stages=num_stages),
    cost_estimate=cost,
    interpret=interpret,
    name="spline_lookup_gather_fwd",
  )(x, table_flat, nodes, invw)


def gather_input_grad(
  x, table, dy, nodes, invw, *, G, bb, bq, num_warps=4, num_stages=2, interpret=False
):
  """dx (P, 2, B_pad) by the closed form with gathered corners (owner-computes, no atomics).

  Args:
    x: (P, 2, B_pad); table: (P, C_pad, Q_pad); dy: (B_pad, Q_pad); nodes, invw: (G1_pad,).
    bb: batch block; bq: output window of the in-kernel loop (divides Q_pad).
  Returns:
    dx: (P, 2, B_pad).
  """
  p, _, b = x.shape
  c_pad, q = table.shape[1:]
  if dy.shape != (b, q) or b % bb or q % bq:
    raise ValueError(
      f"gather_input_grad: x {x.shape}, table {table.shape}, dy {dy.shape}, "
      f"blocks (bb, bq) = {(bb, bq)}"
    )
  g1 = nodes.shape[0]
  itemsize = x.dtype.itemsize
  cost = pl.CostEstimate(
    flops=int(8 * b * p * q + 30 * b * p),
    transcendentals=int(2 * b * p),
    bytes_accessed=int(itemsize * (4 * b * p * q + dy.size * p + 2 * x.size)),
  )
  return pl.pallas_call(
    functools.partial(_gather_dx_kernel, G=G, bq=bq),
    out_shape=jax.ShapeDtypeStruct((p, 2, b), x.dtype),
    grid=(p, b // bb),
    in_specs=[
      pl.BlockSpec((None, 2, bb), lambda i, j: (i, 0, j)),
      pl.BlockSpec((None, c_pad, q), lambda i, j: (i, 0, 0)),
      pl.BlockSpec((bb, q), lambda i, j: (j, 0)),
      pl.BlockSpec((g1,), lambda i, j: (0,)),
      pl.BlockSpec((g1,), lambda i, j: (0,)),
    ],
    out_specs=pl.BlockSpec((None, 2, bb), lambda i, j: (i, 0, j)),
    compiler_params=pltriton.CompilerParams(num_warps=num_warps, num_stages=num_stages),
    cost_estimate=cost,
    interpret=interpret,
    name="spline_lookup_gather_dx",
  )(x, table, dy, nodes, invw)


def atomic_table_grad(
  x, dy, nodes, invw, *, G, c_pad, bb, bq, num_warps=4, num_stages=2, interpret=False
):
  """dT (P·C_pad, Q_pad) by row-segment atomics (opt-in; not bitwise deterministic on hardware).

  Args:
    x: (P, 2, B_pad); dy: (B_pad, Q_pad); nodes, invw: (G1_pad,).
    bb: samples per program; bq: output window per program (power of two ≥ 16).
  Returns:
    dT flattened: (P·C_pad, Q_pad); reshape to (P, C_pad, Q_pad). Padded corner rows stay zero.
  """
  p, _, b = x.shape
  q = dy.shape[1]
  if dy.shape != (b, q) or b % bb or q % bq:
    raise ValueError(f"atomic_table_grad: x {x.shape}, dy {dy.shape}, blocks (bb, bq) = {(bb, bq)}")
  g1 = nodes.shape[0]
  zeros = jnp.zeros((p * c_pad, q), x.dtype)
  return pl.pallas_call(
    functools.partial(_atomic_dt_kernel, G=G, c_pad=c_pad, n_pairs=p),
    out_shape=jax.ShapeDtypeStruct((p * c_pad, q), x.dtype),
    grid=(b // bb, q // bq),
    in_specs=[
      pl.BlockSpec((p, 2, bb), lambda i, j: (0, 0, i)),
      pl.BlockSpec((bb, bq), lambda i, j: (i, j)),
      pl.BlockSpec((g1,), lambda i, j: (0,)),
      pl.BlockSpec((g1,), lambda i, j: (0,)),
      pl.BlockSpec(memory_space=pl.ANY),
    ],
    out_specs=pl.BlockSpec(memory_space=pl.ANY),
    input_output_aliases={4: 0},
    compiler_params=pltriton.CompilerParams(num_warps=num_warps, num_stages=num_stages),
    interpret=interpret,
    name="spline_lookup_atomic_dtable",
  )(x, dy, nodes, invw, zeros)
