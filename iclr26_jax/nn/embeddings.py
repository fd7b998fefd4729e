"""Time embeddings of the diffusion / flow method packages.

* ``sinusoidal_embedding``: the transformer-style geometric frequency ladder
  ``[sin(scale·t·ω_k), cos(scale·t·ω_k)]``, ``ω_k = 10⁴^(−k/half)`` (MinPV's score networks).
* ``fourier_time_features``: ``[t, sin(2^j π t), cos(2^j π t)]`` for ``j < num_freqs``, for t in
  [0, 1] (PDNS's control and EGNN networks).
"""

from __future__ import annotations

import math

import chex
import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["sinusoidal_embedding", "fourier_time_features"]


def sinusoidal_embedding(t: jax.Array, num_features: int, scale: float = 1000.0) -> jax.Array:
  """``(B,) -> (B, num_features)`` float32: [sin(scale·t·ω_k), cos(scale·t·ω_k)],
  ω_k = 10⁴^(−k/half), k < half = num_features / 2."""
  chex.assert_rank(
    t, 1, custom_message=f"t must be (B,); got shape {t.shape}", exception_type=ValueError
  )
  if num_features < 2 or num_features % 2:
    raise ValueError(f"num_features must be an even number >= 2; got {num_features}")
  half = num_features // 2
  freqs = jnp.exp(-np.log(10000.0) * jnp.arange(half, dtype=jnp.float32) / half)
  args = scale * t[:, None].astype(jnp.float32) * freqs[None, :]
  return jnp.concatenate([jnp.sin(args), jnp.cos(args)], axis=1)


def fourier_time_features(t, batch: int, num_freqs: int, dtype) -> jax.Array:
  """``(B, 1 + 2·num_freqs)`` of ``dtype``: [t, sin(2^j π t), cos(2^j π t)] for j < num_freqs.

  Args:
    t: a scalar or ``(1,)`` (one time for the whole batch), or ``(batch,)``.
    batch: B.
    num_freqs: number of dyadic frequencies (0 gives the ``(B, 1)`` column t).
    dtype: dtype of the features.
  """
  t = jnp.asarray(t, dtype)
  if t.ndim > 1 or (t.ndim == 1 and t.shape[0] not in (1, batch)):
    raise ValueError(f"t must be a scalar or ({batch},); got shape {tuple(t.shape)}")
  if int(num_freqs) < 0:
    raise ValueError(f"num_freqs must be >= 0; got {num_freqs}")
  t = jnp.broadcast_to(t, (batch,))[:, None]
  freqs = (2.0 ** jnp.arange(num_freqs, dtype=dtype)) * math.pi
  return jnp.concatenate([t, jnp.sin(t * freqs), jnp.cos(t * freqs)], -1)
