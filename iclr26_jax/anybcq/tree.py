"""Whole-model AnyBCQ on a Flax parameter tree: ``quantize_params`` / ``dequantize_params``.

AnyBCQ (Gunho Park et al., NAVER Cloud, "AnyBCQ", ICLR 2026, arXiv 2510.10467; official code
github.com/naver-aics/anybcq) on every Dense and Conv kernel of a Flax param tree, in Flax's own
layout: a kernel ``(K, N)`` (a Conv kernel as its ``(prod(window) · C_in, N)`` patch matrix) is
transposed to the quantizer's ``(N, K)`` and zero-padded along K to a multiple of the group size.
Holds ``QuantizedParams`` (dequantized trees, and the packed bit-plane path of each Dense layer),
``quantize_kernels`` (the per-width trees of ``"anybcq"`` / ``"bcq"`` / ``"rtn"``) and the
nested-dict helpers ``get_path`` / ``set_path``; it imports no model code. The algorithm and the
padding rules: docs/methods/anybcq.md ("The algorithm").
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from iclr26_jax.anybcq.layer import QuantizedDense, dense_variables
from iclr26_jax.anybcq.quantizer import (
  check_group_size,
  check_bits,
  fixed_bcq_quantize,
  quantize,
  rtn_quantize,
)
from kernels_pallas.bitplane_matmul import format as bp_format

__all__ = [
  "METHODS",
  "QuantizedParams",
  "default_filter",
  "dequantize_params",
  "get_path",
  "kernel_paths",
  "quantize_kernels",
  "quantize_params",
  "set_path",
]

METHODS = ("anybcq", "bcq", "rtn")
Path = tuple  # a tuple of dict keys from the root of a param tree to a leaf


# ---------------------------------------------------------------------------------------------
# Nested-dict helpers.


def get_path(tree, path):
  """The leaf of a nested dict at ``path`` (a sequence of keys)."""
  for p in path:
    tree = tree[p]
  return tree


def set_path(tree, path, value):
  """A copy of the nested dict ``tree`` with the leaf at ``path`` replaced; every subtree off the
  path is the original object (not a copy)."""
  if len(path) == 1:
    return {**tree, path[0]: value}
  return {**tree, path[0]: set_path(tree[path[0]], path[1:], value)}


def _leaf_paths(tree, prefix=()) -> list[tuple[Path, Any]]:
  """(path, leaf) of every non-dict leaf of a nested mapping, in insertion order."""
  if hasattr(tree, "items"):
    out = []
    for k, v in tree.items():
      out.extend(_leaf_paths(v, prefix + (k,)))
    return out
  return [(prefix, tree)]


def default_filter(path: Path, leaf) -> bool:
  """Every leaf named ``kernel`` of rank >= 2: Flax ``Dense`` kernels ``(in, out)`` and ``Conv``
  kernels ``(*window, in, out)`` (quantized as the ``(prod(window) · in, out)`` matrix they
  multiply the unfolded input patches by)."""
  return bool(path) and path[-1] == "kernel" and np.ndim(leaf) >= 2


def _as_filter(filter) -> Callable[[Path, Any], bool]:
  if filter is None:
    return default_filter
  if isinstance(filter, str):
    pattern = re.compile(filter)

    def by_regex(path, leaf):
      return pattern.search("/".join(map(str, path))) is not None

    return by_regex
  if callable(filter):
    return filter
  raise ValueError(
    "filter must be None, a regex string matched against 'a/b/kernel' paths, or a callable "
    f"(path, leaf) -> bool; got {type(filter).__name__}"
  )


def kernel_paths(params, filter=None) -> list[Path]:
  """Paths of the leaves ``quantize_params`` would quantize (``filter`` as there), in tree order.

  Raises:
    ValueError: a selected leaf has rank < 2 (names it and why).
  """
  select = _as_filter(filter)
  out = []
  for path, leaf in _leaf_paths(params):
    if select(path, leaf):
      if np.ndim(leaf) < 2:
        raise ValueError(
          f"filter selected {'/'.join(map(str, path))} of shape {np.shape(leaf)}, which cannot be "
          "quantized: AnyBCQ quantizes weight matrices (a Dense kernel (in, out) or a Conv kernel "
          "(*window, in, out)), one scale group along the inputs of each output; a bias or scale "
          "vector has no input axis"
        )
      out.append(path)
  return out


# ---------------------------------------------------------------------------------------------
# Group size and padding.


def _group_and_width(k: int, group_size: int) -> tuple[int, int]:
  """(g, K_q): the group length and the padded input width of a kernel with K inputs."""
  g = int(group_size)
  if k < g:  # one group: the smallest power of two >= max(K, 32) (divides the 256-input tile)
    g = min(g, max(bp_format.BITS, 1 << (int(k) - 1).bit_length()))
  k_q = -(-k // g) * g
  if k_q % bp_format.BITS:  # a group size that is not a multiple of 32: pad further for the planes
    k_q = int(np.lcm(g, bp_format.BITS)) * -(-k // int(np.lcm(g, bp_format.BITS)))
  return g, k_q


# ---------------------------------------------------------------------------------------------
# The quantized model.


@dataclasses.dataclass(frozen=True)
class QuantizedParams:
  """A Flax param tree with every selected kernel replaced by one AnyBCQ multi-precision weight.

  Attributes:
    params: the original tree (the full-precision leaves that are not quantized are used as they
      are; the quantized kernels' FP values are not read after quantization).
    weights: ``{path: QuantizedWeight}`` per quantized kernel; the weight is ``(N, K_q)`` (out,
      padded in), the transpose of the zero-padded Flax kernel ``(K_q, N)``.
    in_features: ``{path: K}``, the logical input width of each kernel (the padding is K_q - K;
      a Conv kernel ``(*window, C_in, N)`` has K = prod(window) · C_in).
    dtypes: ``{path: dtype}`` of each original kernel (dequantized kernels are cast back to it).
    bits: the stored precisions (ascending).
    group_size: the requested group size g (a kernel with K < g uses a smaller group, see
      ``quantize_params``; each weight's own is ``weights[path].group_size``).
    asymmetric: whether the weights hold per-precision offsets beta.
  """

  params: Any
  weights: dict
  in_features: dict
  dtypes: dict
  bits: tuple
  group_size: int
  asymmetric: bool
  shapes: dict = dataclasses.field(default_factory=dict)  # {path: original shape} of Conv kernels

  @property
  def paths(self) -> list[Path]:
    """Paths of the quantized kernels, in tree order."""
    return list(self.weights)

  def _path(self, path) -> Path:
    path = tuple(path) if not isinstance(path, str) else tuple(path.split("/"))
    if path not in self.weights and path + ("kernel",) in self.weights:
      path = path + ("kernel",)
    if path not in self.weights:
      raise ValueError(
        f"path {path} is not a quantized kernel; the quantized kernels are "
        f"{['/'.join(map(str, p)) for p in self.weights]}"
      )
    return path

  def _bits(self, bits) -> int:
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) or bits not in self.bits:
      raise ValueError(f"bits must be one of the stored precisions {self.bits}; got {bits!r}")
    return int(bits)

  def kernel(self, path, bits: int) -> jax.Array:
    """The dequantized Flax kernel of ``path`` at precision ``bits``: ``(K, N)`` for a Dense kernel,
    the original ``(*window, C_in, N)`` for a Conv kernel, in the original dtype."""
    path, p = self._path(path), self._bits(bits)
    w_hat = self.weights[path].dequantize(p)  # (N, K_q) f32
    k = w_hat[:, : self.in_features[path]].T.astype(self.dtypes[path])
    return k.reshape(self.shapes[path]) if path in self.shapes else k

  def dequantize(self, bits: int):
    """The param tree at precision ``bits``: same structure, shapes and dtypes as ``params``."""
    p = self._bits(bits)
    out = self.params
    for path in self.weights:
      out = set_path(out, path, self.kernel(path, p))
    return out

  def _bias(self, path: Path):
    parent = get_path(self.params, path[:-1])
    return parent.get("bias") if hasattr(parent, "get") else None

  def dense_module(self, path, *, impl: str = "auto", interpret: bool | None = False):
    """The ``QuantizedDense`` serving the kernel at ``path`` (input width K_q; see ``apply_dense``).

    Raises:
      ValueError: the kernel's group size does not divide the packed format's 256-input tile
        (only 32, 64, 128, 256 do).
    """
    path = self._path(path)
    qw = self.weights[path]
    if path in self.shapes:
      raise ValueError(
        f"{'/'.join(map(str, path))} is a Conv kernel {self.shapes[path]}: the packed bit-plane "
        "path serves Dense layers; use dequantize(bits) for convolutions"
      )
    if bp_format.TILE % qw.group_size:
      raise ValueError(
        f"the packed path needs a group size dividing {bp_format.TILE}; {path} uses "
        f"g = {qw.group_size} (quantize with group_size in (32, 64, 128, 256))"
      )
    return QuantizedDense(
      features=qw.shape[0],
      bits=self.bits,
      group_size=qw.group_size,
      asymmetric=self.asymmetric,
      use_bias=self._bias(path) is not None,
      impl=impl,
      interpret=interpret,
    )

  def dense_variables(self, path) -> dict:
    """Variables of ``dense_module(path)``: packed planes, scales and the FP bias (if any).

    Returns:
      ``{"bitplanes": {"planes": uint32 (max(bits), K_pad/32, N)}, "params": {"alpha": ...,
      ["beta": ...], ["bias": (N,)]}}`` (``layer.dense_variables``).
    """
    path = self._path(path)
    return dense_variables(self.weights[path], self._bias(path))

  def apply_dense(
    self, path, x, bits, *, impl: str = "auto", interpret: bool | None = False
  ) -> jax.Array:
    """``x @ kernel^(bits) (+ bias)`` by the bit-plane matmul of the packed weight, to f32 rounding.

    Args:
      path: the kernel's path (or its module's path, without ``"kernel"``).
      x: ``(..., K)`` float inputs (zero-padded here to K_q).
      bits: a stored precision (or an int array ``x.shape[:-1]`` of them, one per row).
      impl, interpret: forwarded to ``QuantizedDense``.
    Returns:
      ``(..., N)`` in x's dtype.
    """
    path = self._path(path)
    k, k_q = self.in_features[path], self.weights[path].shape[1]
    x = jnp.asarray(x)
    if x.ndim < 1 or x.shape[-1] != k:
      raise ValueError(f"x must be (..., K) with K = {k} for {path}; got shape {x.shape}")
    if k_q > k:
      x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, k_q - k)])
    if isinstance(bits, (int, np.integer)) and not isinstance(bits, bool):
      bits = self._bits(bits)
    module = self.dense_module(path, impl=impl, interpret=interpret)
    return module.apply(self.dense_variables(path), x, bits)

  def apply(
    self,
    model,
    *args,
    bits: int,
    impl: str = "auto",
    interpret: bool | None = False,
    **kwargs,
  ):
    """The whole model at precision ``bits`` with its quantized Dense layers on packed weights.

    Runs ``model.apply(variables, *args, **kwargs)`` with every ``nn.Dense`` whose kernel was
    quantized computed by ``apply_dense`` (the bit-plane matmul of the packed planes, its bias
    in full precision) instead of a float matmul; quantized Conv kernels enter dequantized
    (the packed path serves matmuls), every other leaf as it is. The output equals
    ``model.apply(dequantize_params(self, bits), ...)`` to float32 rounding.

    Args:
      model: the Flax module whose parameters were quantized (``quantize_params(params)`` with
        ``params = model.init(...)`` or its ``"params"`` dict).
      args, kwargs: the inputs, as for ``model.apply``.
      bits: a stored precision.
      impl, interpret: forwarded to ``QuantizedDense``.
    Returns:
      what ``model.apply`` returns.

    Examples:
      >>> import jax, jax.numpy as jnp, flax.linen as nn
      >>> from iclr26_jax import anybcq
      >>> model = nn.Sequential([nn.Dense(64), nn.relu, nn.Dense(8)])
      >>> x = jax.random.normal(jax.random.key(0), (4, 32))
      >>> q = anybcq.quantize_params(model.init(jax.random.key(1), x), bits=(2, 4), rounds=4)
      >>> y = q.apply(model, x, bits=4)
      >>> ref = model.apply(anybcq.dequantize_params(q, 4), x)
      >>> y.shape, bool(jnp.allclose(y, ref, atol=1e-4))
      ((4, 8), True)
    """
    import flax.linen as nn

    p = self._bits(bits)
    variables = self.dequantize(p)
    wrapped = not (isinstance(variables, dict) and "params" in variables)
    if wrapped:
      variables = {"params": variables}
    packed = {
      path[:-1] if wrapped else path[1:-1]: path
      for path in self.weights
      if path not in self.shapes and path[-1] == "kernel" and (wrapped or path[0] == "params")
    }

    def interceptor(next_fun, call_args, call_kwargs, context):
      module = context.module
      path = packed.get(tuple(module.path)) if isinstance(module, nn.Dense) else None
      if context.method_name != "__call__" or path is None or len(call_args) != 1:
        return next_fun(*call_args, **call_kwargs)
      (x,) = call_args
      # nn.Dense's own output dtype: its ``dtype``, else the promotion of input and parameters.
      dtype = module.dtype if module.dtype is not None else jnp.result_type(x, module.param_dtype)
      return self.apply_dense(path, x, p, impl=impl, interpret=interpret).astype(dtype)

    with nn.intercept_methods(interceptor):
      return model.apply(variables, *args, **kwargs)

  def nbytes(self, bits: int | None = None) -> int:
    """Bytes of the quantized kernels (``QuantizedWeight.nbytes``, logical padded widths K_q):
    everything stored (``bits=None``) or what a ``bits``-bit matmul reads."""
    if bits is not None:
      bits = self._bits(bits)
    return int(sum(q.nbytes(bits) for q in self.weights.values()))


# Rows per quantizer call: whole blocks of about this many weights, so Ctrl-C stops
# ``quantize_params`` between blocks, not at the end of a big matrix.
_BLOCK_WEIGHTS = 1 << 21


def _quantize_in_row_blocks(w: np.ndarray, bits, g: int, rounds: int, asymmetric: bool):
  """``quantize(w, ...)`` for ``w (N, K)`` computed over blocks of rows: every output row and
  group is fitted on its own (greedy init, refinements and expansions act per (row, group)), so
  the blocks give the planes of one call and its scales to float32 rounding (XLA vectorises the
  two shapes differently). All full blocks share one compile."""
  n, k = w.shape
  rows = max(1, _BLOCK_WEIGHTS // max(k, 1))
  if n <= rows:
    return quantize(w, bits, g, rounds, asymmetric)
  parts = [quantize(w[i : i + rows], bits, g, rounds, asymmetric) for i in range(0, n, rows)]
  first = parts[0]
  return first.replace(
    signs=jnp.concatenate([p.signs for p in parts], axis=1),
    alphas=tuple(jnp.concatenate(a, axis=0) for a in zip(*(p.alphas for p in parts))),
    betas=None
    if first.betas is None
    else tuple(jnp.concatenate(b, axis=0) for b in zip(*(p.betas for p in parts))),
  )


def quantize_params(
  params,
  *,
  bits: Sequence[int] = (2, 3, 4),
  group_size: int = 128,
  rounds: int = 20,
  asymmetric: bool = True,
  filter: str | Callable[[Path, Any], bool] | None = None,
) -> QuantizedParams:
  """AnyBCQ-quantizes every Dense and Conv kernel of a Flax param tree into one multi-precision model.

  Each selected kernel ``(K, N)`` (a Conv kernel ``(*window, C_in, N)`` as its
  ``(prod(window) · C_in, N)`` patch matrix) is transposed to ``(N, K)``, zero-padded along K to a
  multiple of the group size (any K works) and quantized by ``quantizer.quantize``; it dequantizes
  back to its own shape. Biases, norms and embeddings stay in full precision.

  Args:
    params: a nested dict of arrays (``{"params": ...}`` as ``Module.init`` returns, or its inner
      dict).
    bits: ascending stored precisions (one shared plane stack serves all of them).
    group_size: g, inputs per scale group along K (a kernel with K < g uses one group of the
      smallest power of two >= max(K, 32)).
    rounds: T, refinement rounds for the base and every expansion (paper: 20).
    asymmetric: per-(row, group, precision) offsets beta (the paper's setting and the default of
      every AnyBCQ function here).
    filter: which leaves to quantize (integer kernels are cast to float32 and dequantize to
      float32): None (every leaf of rank >= 2 named ``kernel``), a regex searched in
      the ``"/"``-joined path (e.g. ``"Dense_[01]/kernel"``), or ``filter(path, leaf) -> bool``.
  Returns:
    ``QuantizedParams``; ``.dequantize(p)`` / ``dequantize_params(q, p)`` give the p-bit tree,
    ``.apply_dense(path, x, p)`` the packed bit-plane matmul of one layer.
  Raises:
    ValueError: no leaf selected, a selected leaf of rank < 2 (named, with why), bad bits /
      group_size / rounds, or non-finite weights (named by path).

  Examples:
    >>> import jax, jax.numpy as jnp, flax.linen as nn
    >>> from iclr26_jax import anybcq
    >>> model = nn.Sequential([nn.Dense(48), nn.relu, nn.Dense(3)])
    >>> x = jax.random.normal(jax.random.key(0), (16, 20))     # input width 20: padded to 32
    >>> params = model.init(jax.random.key(1), x)
    >>> q = anybcq.quantize_params(params, bits=(2, 4), rounds=4)
    >>> [("/".join(p), q.weights[p].shape) for p in q.paths]    # (out, padded in)
    [('params/layers_0/kernel', (48, 32)), ('params/layers_2/kernel', (3, 64))]
    >>> p2, p4 = (anybcq.dequantize_params(q, b) for b in (2, 4))
    >>> jax.tree.map(jnp.shape, p4) == jax.tree.map(jnp.shape, params)
    True
    >>> err = lambda p: float(jnp.linalg.norm(model.apply(p, x) - model.apply(params, x)))
    >>> err(p4) < err(p2)
    True
    >>> k = params["params"]["layers_0"]["kernel"]
    >>> y = q.apply_dense("params/layers_0", x, 4, impl="xla")  # packed bit-plane matmul
    >>> bool(jnp.allclose(y, x @ p4["params"]["layers_0"]["kernel"]
    ...                   + params["params"]["layers_0"]["bias"], atol=1e-4))
    True
  """
  bits = check_bits(bits)
  check_group_size(group_size)
  paths = kernel_paths(params, filter)
  if not paths:
    raise ValueError(
      "quantize_params: no leaf selected (the default selects leaves of rank >= 2 named 'kernel'; "
      "pass filter= to choose others)"
    )
  weights, in_features, dtypes, shapes = {}, {}, {}, {}
  for path in paths:
    kernel = get_path(params, path)
    name = "/".join(map(str, path))
    if np.ndim(kernel) > 2:  # Conv (*window, C_in, N): the (prod(window) · C_in, N) patch matrix
      shapes[path] = tuple(np.shape(kernel))
      kernel = jnp.reshape(kernel, (-1, np.shape(kernel)[-1]))
    k, n = np.shape(kernel)
    g, k_q = _group_and_width(k, int(group_size))
    w = np.zeros((n, k_q), np.float32)
    w[:, :k] = np.asarray(kernel, np.float32).T
    try:
      weights[path] = _quantize_in_row_blocks(w, bits, g, rounds, bool(asymmetric))
    except ValueError as e:
      raise ValueError(f"quantize_params: kernel {name}: {e}") from None
    in_features[path] = int(k)
    dt = jnp.asarray(kernel).dtype
    # An integer (or bool) kernel is quantized as float32 and comes back as float32: its
    # dequantization is not an integer, and rounding it back would truncate it.
    dtypes[path] = dt if jnp.issubdtype(dt, jnp.floating) else jnp.dtype(jnp.float32)
  return QuantizedParams(
    params=params,
    weights=weights,
    in_features=in_features,
    dtypes=dtypes,
    bits=bits,
    group_size=int(group_size),
    asymmetric=bool(asymmetric),
    shapes=shapes,
  )


def dequantize_params(qparams: QuantizedParams, bits: int):
  """The param tree of ``qparams`` at precision ``bits`` (``QuantizedParams.dequantize``).

  Args:
    qparams: from ``quantize_params``.
    bits: one of ``qparams.bits``.
  Returns:
    a tree of the original structure, shapes and dtypes: every quantized kernel ``(K, N)`` is
    ``W_hat^(bits)`` (padding stripped), every other leaf the original object.

  Examples:
    >>> import jax, jax.numpy as jnp, flax.linen as nn
    >>> from iclr26_jax import anybcq
    >>> params = nn.Dense(48).init(jax.random.key(0), jnp.ones((1, 20)))
    >>> q = anybcq.quantize_params(params, bits=(2, 4), rounds=4)
    >>> k2 = anybcq.dequantize_params(q, 2)["params"]["kernel"]
    >>> k2.shape, k2.dtype
    ((20, 48), dtype('float32'))
  """
  if not isinstance(qparams, QuantizedParams):
    raise ValueError(
      f"dequantize_params: qparams must be a QuantizedParams (from quantize_params); "
      f"got {type(qparams).__name__}"
    )
  return qparams.dequantize(bits)


# ---------------------------------------------------------------------------------------------
# Per-width trees of the three methods (the LM, digits and MiniLM evaluations).


def quantize_kernels(
  params,
  paths: Sequence[Sequence[str]],
  method: str,
  bits: Sequence[int] = (2, 3, 4),
  group_size: int = 128,
  rounds: int = 20,
  asymmetric: bool = True,
  progress=None,
) -> dict[int, dict]:
  """Replaces the Dense kernels at ``paths`` by their dequantized p-bit versions, for each p in bits.

  A Flax kernel is ``(K, N)`` = (in, out); the quantizer's weight is its transpose ``(N, K)``, grouped
  along K in groups of ``min(group_size, K)`` (K must be a multiple of it: ``quantize_params`` pads
  any K instead).

  Args:
    params: a Flax variables tree ``{"params": ...}``.
    paths: paths (under ``"params"``) of Dense modules whose ``"kernel"`` is quantized.
    method: ``"anybcq"`` (one multi-precision weight per kernel, p-bit kernel =
      ``quantize(W, bits).dequantize(p)``), ``"bcq"`` (``fixed_bcq_quantize`` per width) or ``"rtn"``
      (``rtn_quantize`` per width).
    bits: bit widths (ascending).
    group_size, rounds, asymmetric: quantizer settings (``rounds`` / ``asymmetric`` are unused by RTN,
      which is always asymmetric min-max).
    progress: optional ``progress(done, total)`` called after each kernel (CLIs print it).
  Returns:
    ``{p: params_p}``: a full parameter tree per width (non-quantized leaves shared with ``params``).
  """
  if method not in METHODS:
    raise ValueError(f"method must be one of {METHODS}; got {method!r}")
  bits = check_bits(bits)
  out = {p: params for p in bits}
  for done, path in enumerate(paths, 1):
    full = ("params",) + tuple(path) + ("kernel",)
    kernel = np.asarray(get_path(params, full), np.float32)
    w = kernel.T
    g = min(int(group_size), w.shape[1])
    if method == "anybcq":
      qw = quantize(w, bits, g, rounds, asymmetric)
      hats = {p: qw.dequantize(p) for p in bits}
    elif method == "bcq":
      hats = {p: fixed_bcq_quantize(w, p, g, rounds, asymmetric).dequantize(p) for p in bits}
    else:
      hats = {p: rtn_quantize(w, p, g).dequantize(p) for p in bits}
    for p in bits:
      out[p] = set_path(out[p], full, jnp.asarray(hats[p]).T.astype(kernel.dtype))
    if progress is not None:
      progress(done, len(paths))
  return out
