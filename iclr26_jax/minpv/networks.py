"""Time-conditioned score network for MinPV (after the reference ``JointScoreModel``).

Chen et al., "Don't Forget Its Variance! The Minimum Path Variance Principle …" (ICLR 2026),
reference code github.com/Hoemr/OpenDRE: a residual MLP whose every block receives a sinusoidal
embedding of 1000·t passed through a SiLU MLP, with a scalar time-score head and an optional
d-dimensional data-score head (the joint variant). Dropout is not offered: the conditional
objectives force it to 0 in the reference.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np


def sinusoidal_embedding(t: jax.Array, num_features: int, scale: float = 1000.0) -> jax.Array:
  """``(B,) -> (B, num_features)``: [sin(scale·t·ω_k), cos(scale·t·ω_k)], ω_k = 10⁴^(−k/half)."""
  if t.ndim != 1:
    raise ValueError(f"t must be (B,); got shape {t.shape}")
  if num_features < 2 or num_features % 2:
    raise ValueError(f"num_features must be an even number >= 2; got {num_features}")
  half = num_features // 2
  freqs = jnp.exp(-np.log(10000.0) * jnp.arange(half, dtype=jnp.float32) / half)
  args = scale * t[:, None].astype(jnp.float32) * freqs[None, :]
  return jnp.concatenate([jnp.sin(args), jnp.cos(args)], axis=1)


class ScoreNetwork(nn.Module):
  """``(x (B, d), t (B,)) -> (s_t (B,), s_x (B, d) or None)``.

  Attributes:
    dim: data dimension d.
    width: hidden width (reference 256 for d < 200, else 512).
    depth: number of residual blocks (reference 4).
    time_features: sinusoidal features (reference 512).
    data_head: add the d-dimensional data-score head (joint objective).
    norm: LayerNorm before each block's activation (reference: normalisation on).
    negative_slope: LeakyReLU slope.
    time_scale: the embedding sees time_scale·t (reference 1000).
  """
  dim: int
  width: int = 256
  depth: int = 4
  time_features: int = 512
  data_head: bool = False
  norm: bool = True
  negative_slope: float = 0.01
  time_scale: float = 1000.0

  @nn.compact
  def __call__(self, x, t):
    if x.ndim != 2 or x.shape[1] != self.dim:
      raise ValueError(f"x must be (B, {self.dim}); got {x.shape}")
    if t.shape != (x.shape[0],):
      raise ValueError(f"t must be (B,) = ({x.shape[0]},); got {t.shape}")
    act = lambda h: nn.leaky_relu(h, self.negative_slope)
    emb = sinusoidal_embedding(t, self.time_features, self.time_scale)
    emb = nn.Dense(self.width, name="time_in")(emb)
    emb = nn.Dense(self.width, name="time_out")(nn.silu(emb))
    h = nn.Dense(self.width, name="x_in")(x)
    for i in range(self.depth):
      r = nn.LayerNorm(name=f"norm_{i}")(h) if self.norm else h
      r = nn.Dense(self.width, name=f"block_{i}_a")(act(r))
      r = r + nn.Dense(self.width, name=f"block_{i}_t")(nn.silu(emb))
      r = nn.Dense(self.width, name=f"block_{i}_b")(act(r))
      h = h + r
    h = act(nn.LayerNorm(name="norm_out")(h) if self.norm else h)
    s_t = nn.Dense(1, name="time_head")(h)[:, 0]
    s_x = nn.Dense(self.dim, name="data_head")(h) if self.data_head else None
    return s_t, s_x
