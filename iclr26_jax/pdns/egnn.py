"""E(n)-equivariant control network for the particle targets (EGNN, Satorras, Hoogeboom, Welling,
"E(n) Equivariant Graph Neural Networks", ICML 2021), as in the PDNS particle experiments
(W. Guo et al., "Proximal Diffusion Neural Sampler", ICLR 2026, arXiv 2510.03824; the reference
code github.com/AlexandreGUO2001/PDNS uses an EGNN for DW-4 / LJ-13).

Fully connected graph, node features from the time embedding only; with x_ij = x_i - x_j and
d_ij = |x_ij|^2 each layer does m_ij = phi_e(h_i, h_j, d_ij), x_i += 1/(n-1) sum_j x_ij /
(sqrt(d_ij) + 1) phi_x(m_ij) (the EGNN paper's normalised update, for stability) and
h_i += phi_h(h_i, sum_j m_ij). The output head u_i = 1/(n-1) sum_j x_ij / (sqrt(d_ij) + 1)
phi_u(m_ij) starts at zero (P^theta_0 = P^ref) and is projected to zero CoM, so
u(R x + 1 t^T) = R u(x) and u(P x) = P u(x). The equations: docs/methods/pdns.md ("The algorithm").
"""

from __future__ import annotations

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from iclr26_jax.nn import fourier_time_features, mlp

__all__ = ["EGNNControl"]


class _MLP(nn.Module):
  """``(..., F) -> (..., out)``: Dense(hidden) → SiLU → Dense(out), the last kernel zero if
  ``zero_last``. (A module of its own, named ``_MLP_i`` in the checkpoints.)"""

  hidden: int
  out: int
  zero_last: bool = False

  @nn.compact
  def __call__(self, h):
    return mlp(
      h,
      (self.hidden,),
      self.out,
      activation=nn.silu,
      out_kernel_init=nn.initializers.zeros if self.zero_last else None,
    )


class EGNNControl(nn.Module):
  """EGNN (t, x) -> u for configurations of ``n_particles`` in ``spatial_dim`` dimensions.

  Attributes:
    n_particles, spatial_dim: n and s; the flat input / output size is d = n s (particle i at
      x[:, i s:(i + 1) s]).
    hidden: node / message width.
    depth: message-passing layers.
    num_freqs: sinusoidal time frequencies of the node embedding.
  """

  n_particles: int
  spatial_dim: int
  hidden: int = 32
  depth: int = 3
  num_freqs: int = 4

  @nn.compact
  def __call__(self, t: jax.Array, x: jax.Array) -> jax.Array:
    """t: scalar or (B,); x: (B, n s) -> (B, n s) (CoM-free)."""
    n, s = self.n_particles, self.spatial_dim
    chex.assert_shape(
      x,
      (None, n * s),
      exception_type=ValueError,
      custom_message=(f"x must have shape (B, {n * s}); got {tuple(x.shape)}"),
    )
    b = x.shape[0]
    pos = x.reshape(b, n, s)
    temb = fourier_time_features(t, b, self.num_freqs, x.dtype)  # (B, F)
    h = nn.Dense(self.hidden)(jnp.broadcast_to(temb[:, None], (b, n, temb.shape[-1])))
    off_diag = (1.0 - jnp.eye(n, dtype=x.dtype))[None, :, :, None]  # (1, n, n, 1)

    def messages(h, pos):
      diff = pos[:, :, None, :] - pos[:, None, :, :]  # (B, n, n, s)
      d2 = jnp.sum(diff**2, -1, keepdims=True)
      hi = jnp.broadcast_to(h[:, :, None], (b, n, n, h.shape[-1]))
      hj = jnp.broadcast_to(h[:, None, :], (b, n, n, h.shape[-1]))
      return diff / (jnp.sqrt(d2 + 1e-12) + 1.0), d2, jnp.concatenate([hi, hj, d2], -1)

    for _ in range(self.depth):
      unit, _, e_in = messages(h, pos)
      m = nn.silu(_MLP(self.hidden, self.hidden)(e_in)) * off_diag  # (B, n, n, H)
      pos = pos + jnp.sum(unit * _MLP(self.hidden, 1)(m) * off_diag, 2) / (n - 1)
      h = h + _MLP(self.hidden, self.hidden)(jnp.concatenate([h, jnp.sum(m, 2)], -1))
    unit, _, e_in = messages(h, pos)
    m = nn.silu(_MLP(self.hidden, self.hidden)(e_in))
    u = jnp.sum(unit * _MLP(self.hidden, 1, zero_last=True)(m) * off_diag, 2) / (n - 1)
    u = u - jnp.mean(u, 1, keepdims=True)
    return u.reshape(b, n * s)
