"""`LMKANDense`: the lmKAN layer (Flax Linen), its initialisers and the reference-layout converters.

lmKAN (Pozdnyakov & Schwaller, "lookup multivariate Kolmogorov-Arnold Networks", ICLR 2026; reference
code github.com/schwallergroup/lmkan, PyTorch + CUDA). Every (output q, input pair p) owns a 2-D function
f_qp stored as a (G+1)×(G+1) table on the sigma grid, and y_q = Σ_p f_qp(x_{2p}, x_{2p+1}): consecutive
fixed pairs, no bias, no activation. Odd input widths are padded with one constant-zero input.

Parameter: `table` of shape (P, G+1, G+1, Q), P = ⌈N_in/2⌉, Q = features. The reference checkpoints use
`[G+1, G+1, N_out, N_in/2]`; `from_reference_layout` / `to_reference_layout` convert.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
from flax.linen import dtypes as flax_dtypes

from iclr26_jax.lmkan import reference
from kernels_pallas.spline_lookup.reference import FLOAT_DTYPES
from kernels_pallas import _backend
from kernels_pallas.spline_lookup import ops as spline_ops
from iclr26_jax.lmkan.grid import SigmaGrid, out_of_grid_fraction, validate_grid_size

__all__ = [
  "LMKANDense",
  "affine_table",
  "noise_init",
  "affine_init",
  "resolve_impl",
  "pair_inputs",
  "from_reference_layout",
  "to_reference_layout",
  "IMPLS",
  "INITS",
]

IMPLS = ("auto", "xla", "pallas")
INITS = ("affine", "noise")
DEFAULT_INIT = "affine"  # the project's recommended start (exactly linear, zero Hessian penalty)


def resolve_impl(impl: str) -> str:
  """Resolves the `impl` switch to "xla" or "pallas" ("auto": the kernel on GPU/TPU, the
  pure-jnp reference elsewhere; the kernel op may still fall back to XLA on a GPU below
  Triton's compute-capability floor).

  Raises:
    ValueError: unknown `impl`.
  """
  if impl not in IMPLS:
    raise ValueError(f"impl must be one of {IMPLS}, got {impl!r}.")
  return _backend.resolve_impl(impl)


def pair_inputs(x):
  """Pads the last axis to an even width with a constant-zero input and splits it into pairs.

  Args:
    x: (B, N_in).
  Returns:
    (B, P, 2) with P = ⌈N_in/2⌉; pair p holds inputs (2p, 2p+1).
  """
  chex.assert_rank(
    x,
    2,
    exception_type=ValueError,
    custom_message=(f"x must have shape (B, N_in), got {tuple(x.shape)}."),
  )
  b, n = x.shape
  if n % 2:
    x = jnp.pad(x, ((0, 0), (0, 1)))
  return x.reshape(b, (n + 1) // 2, 2)


def affine_table(weight, grid: SigmaGrid, bias=None):
  """Tables that make the lmKAN layer equal to the affine map x·Wᵀ + b everywhere (the affine init).

  T[p, i, j, q] = W[q, 2p]·t_i + W[q, 2p+1]·t_j + b_q/P. Bilinear interpolation and extrapolation
  reproduce linear functions exactly, so the layer is affine on all of R^N_in, including far outside the
  grid. An odd N_in is padded with a zero column (the padded input is constant zero anyway).

  Args:
    weight: (N_out, N_in) (PyTorch layout, W[q, n]).
    grid: SigmaGrid.
    bias: optional (N_out,).
  Returns:
    table (P, G+1, G+1, N_out), P = ⌈N_in/2⌉, dtype of `weight`.
  """
  weight = jnp.asarray(weight)
  chex.assert_rank(
    weight,
    2,
    exception_type=ValueError,
    custom_message=(f"weight must have shape (N_out, N_in), got {tuple(weight.shape)}."),
  )
  if not isinstance(grid, SigmaGrid):
    raise ValueError(f"grid must be a SigmaGrid, got {type(grid).__name__}.")
  q, n = weight.shape
  if n % 2:
    weight = jnp.pad(weight, ((0, 0), (0, 1)))
  p = weight.shape[1] // 2
  w = weight.reshape(q, p, 2)
  t = grid.node_array(weight.dtype)
  table = (
    w[:, :, 0].T[:, None, None, :] * t[None, :, None, None]
    + w[:, :, 1].T[:, None, None, :] * t[None, None, :, None]
  )
  if bias is not None:
    bias = jnp.asarray(bias, weight.dtype)
    chex.assert_shape(
      bias,
      (q,),
      exception_type=ValueError,
      custom_message=(f"bias must have shape (N_out,) = {(q,)}, got {tuple(bias.shape)}."),
    )
    table = table + bias[None, None, None, :] / p
  return table


def noise_init(n_in: int, init_scale: float = 0.1) -> Callable:
  """Reference initialiser: every table entry i.i.d. U(−s/√N_in, s/√N_in), N_in the true input width.

  Returns a Flax initialiser `(key, shape, dtype) -> array` for a (P, G+1, G+1, Q) table.
  """
  if n_in < 1:
    raise ValueError(f"n_in must be >= 1, got {n_in}.")
  bound = float(init_scale) / math.sqrt(n_in)

  def init(key, shape, dtype=jnp.float32):
    # Drawn flat and reshaped: a rank-4 draw with partitionable threefry compiles slowly on CPU.
    flat = jax.random.uniform(key, (math.prod(shape),), dtype, -bound, bound)
    return flat.reshape(shape)

  return init


def affine_init(n_in: int, grid: SigmaGrid) -> Callable:
  """Affine initialiser: the table of the linear map x·Wᵀ, W ~ N(0, 1/N_in) of shape (Q, N_in).

  The layer starts as exactly linear (everywhere) with zero Hessian penalty. Returns a Flax initialiser
  `(key, shape, dtype) -> array` for a (P, G+1, G+1, Q) table.
  """
  if n_in < 1:
    raise ValueError(f"n_in must be >= 1, got {n_in}.")

  def init(key, shape, dtype=jnp.float32):
    q = shape[-1]
    w = jax.random.normal(key, (q * n_in,), dtype).reshape(q, n_in) / math.sqrt(n_in)
    table = affine_table(w, grid)
    chex.assert_shape(
      table,
      tuple(shape),
      exception_type=ValueError,
      custom_message=(
        f"affine_init built a table of shape {table.shape}, expected {tuple(shape)}."
      ),
    )
    return table

  return init


def from_reference_layout(ref_table):
  """Reference checkpoint layout [G+1, G+1, N_out, N_in/2] → ours (P, G+1, G+1, Q) (transpose (3,0,1,2))."""
  ref_table = jnp.asarray(ref_table)
  if ref_table.ndim != 4 or ref_table.shape[0] != ref_table.shape[1]:
    raise ValueError(
      f"ref_table must have shape (G+1, G+1, N_out, N_in/2), got {tuple(ref_table.shape)}."
    )
  return jnp.transpose(ref_table, (3, 0, 1, 2))


def to_reference_layout(table):
  """Ours (P, G+1, G+1, Q) → reference checkpoint layout [G+1, G+1, N_out, N_in/2] (transpose (1,2,3,0))."""
  table = jnp.asarray(table)
  if table.ndim != 4 or table.shape[1] != table.shape[2]:
    raise ValueError(f"table must have shape (P, G+1, G+1, Q), got {tuple(table.shape)}.")
  return jnp.transpose(table, (1, 2, 3, 0))


class LMKANDense(nn.Module):
  """An lmKAN layer (Flax Linen): y_q = Σ_p f_qp(x_{2p}, x_{2p+1}), batch-first, no bias.

  The drop-in for `flax.linen.Dense(features, use_bias=False)`, at 2x its FLOPs whatever G. Input
  `(..., N_in)` with any N_in ≥ 1 (odd widths get one constant-zero input), output
  `(..., features)`. Leading dims are flattened to a batch and inputs paired to (B, P, 2) for the
  lookup. Train it with BatchNorm before every layer and the two-phase recipe (`make_network`,
  `recipe_optimizer`).

  Dtypes follow `flax.linen.Dense`: the table is stored in `param_dtype`; the inputs and the table are
  cast to `dtype` for the computation (None: promoted from the input's and `param_dtype`'s, so float32
  tables with bfloat16 inputs compute in float32 unless `dtype=jnp.bfloat16` is asked for). A bfloat16
  or float16 `dtype` rounds x and the table to it, computes the lookup in float32 and rounds the output
  once (both paths; see `spline_lookup`); the table's gradient comes back in `param_dtype`.

  Sows the fraction of inputs outside [t_0, t_G] as `intermediates/out_of_grid_frac` (a no-op unless the
  collection is mutable).

  Attributes:
    features: N_out ≥ 1.
    grid_size: G ≥ 3 intervals per axis (8–10 to start).
    table_init: "affine" (default, the recommended start: the tables of a random linear map
      W ~ N(0, 1/N_in), so the layer is exactly linear everywhere with zero Hessian penalty) or "noise"
      (the reference code's U(±init_scale/√N_in), which stalled deep nets in this project's runs).
      (Not named `init`: a Linen field of that name would shadow `Module.init`.)
    init_scale: s of the noise init (unused by "affine").
    impl: "xla" (`reference.spline_lookup_xla`, pure jnp with the closed-form `custom_vjp`),
      "pallas" (`kernels_pallas.spline_lookup.ops.spline_lookup`) or "auto" (the kernel on GPU/TPU
      when it is installed, else the reference).
    dtype: computation dtype (None: promote the input's and `param_dtype`), float32 / float64 /
      bfloat16 / float16.
    param_dtype: dtype of the stored table (float32 default; float64, bfloat16, float16 allowed).
    chunk_pairs: pairs per gather chunk in the reference path (None: automatic).
    interpret: Pallas interpret mode for the kernel path (None: interpret on a CPU host, compiled on
      GPU/TPU); ignored by the XLA path.

  Examples:
    bfloat16 compute on float32 tables, in a jitted gradient step:

    >>> import jax, jax.numpy as jnp
    >>> from iclr26_jax.lmkan import LMKANDense
    >>> layer = LMKANDense(3, grid_size=8, dtype=jnp.bfloat16)
    >>> x = jax.random.normal(jax.random.key(0), (4, 5))
    >>> params = layer.init(jax.random.key(1), x)
    >>> params["params"]["table"].shape, params["params"]["table"].dtype  # (P, G+1, G+1, Q)
    ((3, 9, 9, 3), dtype('float32'))
    >>> y = layer.apply(params, x)
    >>> y.shape, y.dtype
    ((4, 3), dtype(bfloat16))
    >>> g = jax.jit(jax.grad(lambda p: jnp.sum(layer.apply(p, x).astype(jnp.float32) ** 2)))(params)
    >>> g["params"]["table"].dtype
    dtype('float32')

    The default (affine) init makes a float32 layer exactly linear, also far outside the grid:

    >>> lin = LMKANDense(3)
    >>> p32 = lin.init(jax.random.key(1), x)
    >>> bool(jnp.allclose(lin.apply(p32, 10.0 * x), 10.0 * lin.apply(p32, x), atol=1e-3))
    True
  """

  features: int
  grid_size: int = 8
  table_init: str = DEFAULT_INIT
  init_scale: float = 0.1
  impl: str = "auto"
  dtype: Any = None
  param_dtype: Any = jnp.float32
  chunk_pairs: int | None = None
  interpret: bool | None = None

  @property
  def grid(self) -> SigmaGrid:
    return SigmaGrid(validate_grid_size(self.grid_size, "grid_size"))

  @nn.compact
  def __call__(self, x):
    """x: (..., N_in) floating → (..., features)."""
    if isinstance(self.features, bool) or not isinstance(self.features, int) or self.features < 1:
      raise ValueError(f"features must be a positive int, got {self.features!r}.")
    grid = self.grid
    if self.table_init not in INITS:
      raise ValueError(f"table_init must be one of {INITS}, got {self.table_init!r}.")
    for name, dt in (("param_dtype", self.param_dtype), ("dtype", self.dtype)):
      if (dt is not None or name == "param_dtype") and jnp.dtype(dt) not in FLOAT_DTYPES:
        raise ValueError(
          f"{name} must be float32, float64, bfloat16 or float16"
          f"{' (or None)' if name == 'dtype' else ''}, got {dt}."
        )
    impl = resolve_impl(self.impl)
    x = jnp.asarray(x)
    if x.ndim < 1 or x.shape[-1] < 1:
      raise ValueError(f"x must have shape (..., N_in) with N_in >= 1, got {tuple(x.shape)}.")
    chex.assert_type(
      x,
      float,
      exception_type=ValueError,
      custom_message=f"x must be floating, got dtype {x.dtype}.",
    )
    n_in = x.shape[-1]
    lead = x.shape[:-1]
    p = (n_in + 1) // 2
    shape = (p, grid.G + 1, grid.G + 1, self.features)
    if self.table_init == "noise":
      init_fn = noise_init(n_in, self.init_scale)
    else:
      init_fn = affine_init(n_in, grid)
    if self.has_variable("params", "table"):
      got = tuple(self.get_variable("params", "table").shape)
      if got != shape:
        raise ValueError(
          f"table must have shape (P, G+1, G+1, Q) = {shape} for N_in = {n_in}, "
          f"features = {self.features}, grid_size = {grid.G}; got {got}."
        )
    table = self.param("table", init_fn, shape, self.param_dtype)
    # As flax.linen.Dense: cast inputs and parameters to `dtype`, or promote them when it is None.
    xb, table = flax_dtypes.promote_dtype(x.reshape((-1, n_in)), table, dtype=self.dtype)
    self.sow("intermediates", "out_of_grid_frac", out_of_grid_fraction(xb, grid))
    pairs = pair_inputs(xb)
    if impl == "xla":
      y = reference.spline_lookup_xla(pairs, table, grid, chunk_pairs=self.chunk_pairs)
    else:
      # "auto" is passed through so the op can still fall back (e.g. a GPU below Triton's floor).
      y = spline_ops.spline_lookup(pairs, table, grid, impl=self.impl, interpret=self.interpret)
    return y.reshape(lead + (self.features,))
