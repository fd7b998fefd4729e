"""``QuantizedDense``: a Flax Linen layer serving an AnyBCQ weight at a precision chosen per call.

Park et al., "AnyBCQ", ICLR 2026, arXiv 2510.10467; code github.com/naver-aics/anybcq. Storage is
the ``kernels_pallas.bitplane_matmul`` format and the matmul its ``bitplane_matmul``. Variables
(K_pad = round_up(K, 256), S = sum(bits)): ``bitplanes/planes`` uint32 ``(max(bits), K_pad/32, N)``
(not trainable); ``params/alpha`` f32 ``(S, K_pad/g, N)``, row ``offset(p) + b`` is alpha^(p)_b;
``params/beta`` f32 ``(|P|, K_pad/g, N)`` when ``asymmetric``; ``params/bias`` f32 ``(N,)`` when
``use_bias``. A fresh ``init`` gives zero planes and scales; load a quantized weight with
``dense_variables(quantized_weight, bias)``. The algorithm, with its equations and reference
hyperparameters: docs/methods/anybcq.md ("The algorithm").
"""

from __future__ import annotations

from typing import Any, Sequence

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from iclr26_jax.anybcq.quantizer import QuantizedWeight, check_bits
from kernels_pallas.bitplane_matmul import format as bp_format
from kernels_pallas.bitplane_matmul.ops import bitplane_matmul

__all__ = ["QuantizedDense", "dense_variables", "IMPLS", "PLANES_COLLECTION"]

IMPLS = ("auto", "xla", "pallas")
PLANES_COLLECTION = "bitplanes"


def dense_variables(qw: QuantizedWeight, bias=None) -> dict:
  """Variables of a ``QuantizedDense`` holding ``qw`` (and an optional bias ``(N,)``).

  Returns:
    ``{"bitplanes": {"planes": uint32 (NB, K_pad/32, N)}, "params": {"alpha": (S, K_pad/g, N),
    ["beta": (|P|, K_pad/g, N)], ["bias": (N,)]}}``.
  """
  if not isinstance(qw, QuantizedWeight):
    raise ValueError(f"dense_variables: qw must be a QuantizedWeight; got {type(qw).__name__}")
  packed = qw.to_packed()
  params = {"alpha": packed.alpha}
  if packed.beta is not None:
    params["beta"] = packed.beta
  if bias is not None:
    bias = jnp.asarray(bias, jnp.float32)
    chex.assert_shape(
      bias,
      (qw.shape[0],),
      exception_type=ValueError,
      custom_message=f"bias must have shape (N,) = ({qw.shape[0]},); got {bias.shape}",
    )
    params["bias"] = bias
  return {PLANES_COLLECTION: {"planes": packed.planes}, "params": params}


class QuantizedDense(nn.Module):
  """y = x @ W_hat^(p).T (+ bias) with an AnyBCQ multi-precision weight.

  Attributes:
    features: N, output features.
    bits: stored precisions P (ascending); max(bits) planes are stored.
    group_size: g (the Pallas kernels take 64, 128 or 256; "auto" falls back to XLA otherwise).
    asymmetric: hold per-precision offsets beta (default True, as ``quantizer.quantize``; False
      for a symmetric weight, whose ``dense_variables`` have no beta).
    use_bias: add a bias.
    impl: "auto" | "xla" | "pallas", forwarded to ``bitplane_matmul``.
    interpret: Pallas interpret mode (CPU testing); None = interpret on CPU only.
  """

  features: int
  bits: Sequence[int] = (2, 3, 4)
  group_size: int = 128
  asymmetric: bool = True
  use_bias: bool = False
  impl: str = "auto"
  interpret: bool | None = False

  @nn.compact
  def __call__(self, x: jax.Array, precision: Any) -> jax.Array:
    """Args:
      x: ``(..., K)`` float activations, K % 32 == 0 and K % g == 0.
      precision: an int in ``bits`` (Python or traced), or an int array ``x.shape[:-1]`` giving each
        row its own precision.
    Returns:
      ``(..., N)`` in x's dtype.
    """
    bits = check_bits(self.bits)
    if self.impl not in IMPLS:
      raise ValueError(f"impl must be one of {IMPLS}; got {self.impl!r}")
    if getattr(x, "ndim", 0) < 1 or not jnp.issubdtype(x.dtype, jnp.floating):
      raise ValueError(f"x must be a float array (..., K); got {getattr(x, 'dtype', type(x))}")
    k, g, n = x.shape[-1], int(self.group_size), int(self.features)
    if k % g:
      raise ValueError(f"x: input dim K = {k} is not a multiple of group_size g = {g}")
    if k % bp_format.BITS:
      raise ValueError(f"x: input dim K = {k} must be a multiple of 32 for the packed planes")
    k_pad = -(-k // bp_format.TILE) * bp_format.TILE
    if k_pad % g:
      raise ValueError(f"group_size g = {g} must divide K_pad = {k_pad}")
    if isinstance(precision, int) and not isinstance(precision, bool) and precision not in bits:
      raise ValueError(f"precision {precision} is out of range: the stored precisions are {bits}")
    planes = self.variable(
      PLANES_COLLECTION, "planes", jnp.zeros, (bits[-1], k_pad // bp_format.BITS, n), jnp.uint32
    ).value
    alpha = self.param("alpha", nn.initializers.zeros, (sum(bits), k_pad // g, n), jnp.float32)
    beta = None
    if self.asymmetric:
      beta = self.param("beta", nn.initializers.zeros, (len(bits), k_pad // g, n), jnp.float32)
    y = bitplane_matmul(
      x,
      planes,
      alpha,
      beta,
      precision,
      precisions=bits,
      group_size=g,
      impl=self.impl,
      interpret=self.interpret,
    )
    if self.use_bias:
      y = y + self.param("bias", nn.initializers.zeros, (n,), jnp.float32).astype(y.dtype)
    return y
