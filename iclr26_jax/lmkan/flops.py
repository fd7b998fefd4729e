"""FLOP and parameter accounting for lmKAN and MLP/CNN baselines.

lmKAN (Pozdnyakov & Schwaller, ICLR 2026; reference code github.com/schwallergroup/lmkan). The
headline count follows the paper's Fig. 1: 2 FLOPs per multiply-add of a linear layer
(2·N_in·N_out), 8 per lmKAN function lookup (8·⌈N_in/2⌉·N_out = 2x linear for even N_in, whatever
G). Biases, BatchNorm and the lmKAN per-pair arithmetic go to a separate overhead count (constants
below), the same for both families; ReLU, pooling and argmax are not counted. Holds the per-layer
counters (`linear_flops`, `lmkan_flops`, `lmkan_overhead`, ...), `ModelCost` and `count_model`.

The full convention: docs/methods/lmkan.md ("The algorithm").
"""

from __future__ import annotations

import math
from typing import NamedTuple, Sequence

import flax.linen as nn
import jax
import numpy as np

from iclr26_jax.lmkan.layer import LMKANDense
from iclr26_jax.core import validate

__all__ = [
  "PAIR_OVERHEAD_FLOPS",
  "PAIR_OVERHEAD_TRANSCENDENTALS",
  "LOOKUP_FLOPS_PER_FUNCTION",
  "BATCHNORM_FLOPS_PER_ELEMENT",
  "BIAS_FLOPS_PER_ELEMENT",
  "linear_flops",
  "linear_params",
  "lmkan_flops",
  "lmkan_overhead",
  "lmkan_params",
  "mlp_flops",
  "lmkan_net_flops",
  "ModelCost",
  "count_model",
  "count_params",
]

# Per (sample, pair): 2 exp for σ (transcendentals), 2 mul + floor + clamp (cells: counted as 2),
# 2 sub + 2 mul (δ), 2 sub + 4 mul (weights) = 12 FLOPs.
PAIR_OVERHEAD_FLOPS = 12
PAIR_OVERHEAD_TRANSCENDENTALS = 2
# Per (sample, function): 4 FMAs = 8 FLOPs.
LOOKUP_FLOPS_PER_FUNCTION = 8
# Inference BatchNorm without affine, per normalised element: subtract μ, multiply by precomputed 1/√(σ²+ε).
BATCHNORM_FLOPS_PER_ELEMENT = 2
# Bias add, per output element of a Dense / Conv with a bias.
BIAS_FLOPS_PER_ELEMENT = 1


def linear_flops(n_in: int, n_out: int) -> int:
  """FLOPs of a linear layer per sample (or per output position): 2·N_in·N_out (bias excluded)."""
  return 2 * validate.positive_int(n_in, "n_in") * validate.positive_int(n_out, "n_out")


def linear_params(n_in: int, n_out: int, bias: bool = True) -> int:
  """Parameters of a linear layer: N_in·N_out (+ N_out with bias)."""
  n_in, n_out = validate.positive_int(n_in, "n_in"), validate.positive_int(n_out, "n_out")
  return n_in * n_out + (n_out if bias else 0)


def lmkan_flops(n_in: int, n_out: int) -> int:
  """Lookup FLOPs of an lmKAN layer per sample: 8·⌈N_in/2⌉·N_out (= 4·N_in·N_out for even N_in)."""
  n_in, n_out = validate.positive_int(n_in, "n_in"), validate.positive_int(n_out, "n_out")
  return LOOKUP_FLOPS_PER_FUNCTION * ((n_in + 1) // 2) * n_out


def lmkan_overhead(n_in: int) -> tuple[int, int]:
  """Per-sample per-pair overhead of an lmKAN layer: (12·P FLOPs, 2·P transcendentals), P = ⌈N_in/2⌉."""
  p = (validate.positive_int(n_in, "n_in") + 1) // 2
  return PAIR_OVERHEAD_FLOPS * p, PAIR_OVERHEAD_TRANSCENDENTALS * p


def lmkan_params(n_in: int, n_out: int, grid_size: int) -> int:
  """Parameters of an lmKAN layer: (G+1)²·N_out·⌈N_in/2⌉ (no bias)."""
  n_in, n_out, g = (
    validate.positive_int(n_in, "n_in"),
    validate.positive_int(n_out, "n_out"),
    validate.positive_int(grid_size, "grid_size"),
  )
  if g < 3:
    raise ValueError(f"grid_size must be >= 3, got {g}.")
  return (g + 1) ** 2 * n_out * ((n_in + 1) // 2)


def _widths(widths):
  widths = tuple(widths)
  if len(widths) < 2:
    raise ValueError(
      f"widths must list the input width and at least one layer width, got {widths!r}."
    )
  return [validate.positive_int(w, "widths[i]") for w in widths]


def mlp_flops(widths: Sequence[int]) -> int:
  """FLOPs per sample of an MLP n_0 → … → n_L: 2·Σ n_{l−1}·n_l (biases and activations excluded).

  Example (Fig. 1): mlp_flops([32, H, H, H, 1]) = 2·(32H + 2H² + H); 2080 at H = 16.
  """
  w = _widths(widths)
  return sum(linear_flops(a, b) for a, b in zip(w[:-1], w[1:]))


def lmkan_net_flops(widths: Sequence[int]) -> int:
  """Lookup FLOPs per sample of an lmKAN stack n_0 → … → n_L: Σ 8·⌈n_{l−1}/2⌉·n_l (= 4·Σ n_{l−1}n_l, even)."""
  w = _widths(widths)
  return sum(lmkan_flops(a, b) for a, b in zip(w[:-1], w[1:]))


class ModelCost(NamedTuple):
  """Per-sample cost of a model.

  Attributes:
    flops: headline FLOPs (linear 2/MAC, lookup 8/function).
    overhead_flops: FLOPs left out of the headline: lmKAN per-pair arithmetic
      (12/pair), inference BatchNorm (2/element), bias adds (1/element).
    overhead_transcendentals: lmKAN per-pair exp count (2/pair).
    params: number of trainable parameters (the `params` collection).
  """

  flops: int
  overhead_flops: int
  overhead_transcendentals: int
  params: int

  @property
  def total_flops(self) -> int:
    """Headline + overhead FLOPs, each exp counted as one FLOP."""
    return self.flops + self.overhead_flops + self.overhead_transcendentals


def count_params(params) -> int:
  """Total number of elements of all leaves of a parameter pytree."""
  return int(sum(int(np.prod(getattr(x, "shape", ()))) for x in jax.tree_util.tree_leaves(params)))


def count_model(module: nn.Module, x, *args, **kwargs) -> ModelCost:
  """Counts a Flax model's per-sample cost by intercepting its layers while tracing `init` (no compute).

  Counted: `LMKANDense` (lookup FLOPs and per-pair overhead, per position), `nn.Dense` (2·N_in·N_out per
  position, + N_out overhead with a bias), `nn.Conv` (2·kh·kw·C_in/groups·C_out per output position,
  + C_out overhead with a bias) and `nn.BatchNorm` (2 overhead FLOPs per element). Pooling and
  activations are not counted.

  Args:
    module: a Flax Linen module.
    x: an example batch, leading dim B (an array or `jax.ShapeDtypeStruct`).
    *args: extra positional arguments of the module's `__call__`.
    **kwargs: extra keyword arguments of the module's `__call__` (e.g. `train=False`).
  Returns:
    ModelCost per sample.
  """
  if not hasattr(x, "shape") or len(x.shape) < 1 or x.shape[0] < 1:
    raise ValueError(
      f"x must be a batch with a leading batch dim, got shape {getattr(x, 'shape', None)}."
    )
  batch = x.shape[0]
  tally = dict(flops=0, overhead=0, trans=0)

  def interceptor(next_fun, a, kw, context):
    mod = context.module
    if context.method_name != "__call__" or not isinstance(
      mod, (LMKANDense, nn.Dense, nn.Conv, nn.BatchNorm)
    ):
      return next_fun(*a, **kw)
    inp = a[0]
    out = next_fun(*a, **kw)
    if isinstance(mod, LMKANDense):
      n_in = inp.shape[-1]
      pos = math.prod(inp.shape[:-1])
      tally["flops"] += pos * lmkan_flops(n_in, mod.features)
      of, ot = lmkan_overhead(n_in)
      tally["overhead"] += pos * of
      tally["trans"] += pos * ot
    elif isinstance(mod, nn.BatchNorm):
      tally["overhead"] += BATCHNORM_FLOPS_PER_ELEMENT * math.prod(inp.shape)
    elif isinstance(mod, nn.Dense):
      tally["flops"] += math.prod(inp.shape[:-1]) * linear_flops(inp.shape[-1], mod.features)
      if mod.use_bias:
        tally["overhead"] += BIAS_FLOPS_PER_ELEMENT * math.prod(out.shape)
    else:  # nn.Conv
      ks = mod.kernel_size if isinstance(mod.kernel_size, (tuple, list)) else (mod.kernel_size,)
      c_in = inp.shape[-1] // mod.feature_group_count
      tally["flops"] += math.prod(out.shape[:-1]) * linear_flops(math.prod(ks) * c_in, mod.features)
      if mod.use_bias:
        tally["overhead"] += BIAS_FLOPS_PER_ELEMENT * math.prod(out.shape)
    return out

  with nn.intercept_methods(interceptor):
    variables = jax.eval_shape(lambda xx: module.init(jax.random.key(0), xx, *args, **kwargs), x)
  params = count_params(variables.get("params", {}))
  per = lambda v: int(v // batch)
  return ModelCost(per(tally["flops"]), per(tally["overhead"]), per(tally["trans"]), params)
