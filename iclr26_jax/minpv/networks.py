"""Time-conditioned score networks for MinPV: ``ScoreNetwork`` and ``QuadraticTimeScore``.

Chen et al., "Don't Forget Its Variance! The Minimum Path Variance Principle …" (ICLR 2026),
reference code github.com/Hoemr/OpenDRE. ``ScoreNetwork`` follows the reference
``JointScoreModel``: a residual MLP whose every block receives a SiLU MLP of a sinusoidal
embedding of time_scale·t, a scalar time-score head and an optional data-score head (joint
objective); no dropout (the reference forces it to 0 for the conditional objectives).
``time_scale_for`` resolves the scale by objective: 30 for the implicit (DRE-∞) objective, whose
λ ∂_t s term differentiates the embedding, else the reference's 1000.
"""

from __future__ import annotations

import chex
import flax.linen as nn
import jax.numpy as jnp

from iclr26_jax.nn import mlp, sinusoidal_embedding


RECOMMENDED_TIME_SCALE = {"implicit": 30.0, "conditional": 1000.0, "joint": 1000.0}


def time_scale_for(objective: str, time_scale: float) -> float:
  """The embedding scale used: ``time_scale`` if > 0, else the objective's recommended one."""
  if time_scale > 0:
    return float(time_scale)
  if objective not in RECOMMENDED_TIME_SCALE:
    raise ValueError(f"objective must be one of {tuple(RECOMMENDED_TIME_SCALE)}; got {objective!r}")
  return RECOMMENDED_TIME_SCALE[objective]


def _check_inputs(x, t, dim: int) -> None:
  """x must be (B, dim) and t (B,)."""
  chex.assert_shape(
    x, (None, dim), exception_type=ValueError, custom_message=f"x must be (B, {dim}); got {x.shape}"
  )
  chex.assert_shape(
    t,
    (x.shape[0],),
    exception_type=ValueError,
    custom_message=(f"t must be (B,) = ({x.shape[0]},); got {t.shape}"),
  )


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
    _check_inputs(x, t, self.dim)
    act = lambda h: nn.leaky_relu(h, self.negative_slope)
    emb = sinusoidal_embedding(t, self.time_features, self.time_scale)
    emb = mlp(emb, (self.width,), self.width, activation=nn.silu, names=("time_in", "time_out"))
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


class QuadraticTimeScore(nn.Module):
  """Parametric Gaussian time-score model: ``(x (B, d), t (B,)) -> (s_t (B,), s_x (B, d) or None)``.

      y = W x,   s_t(x, t) = a(t) + Σ_k b_k(t) y_k²,   s_x(x, t) = −Wᵀ (c(t) ⊙ y)

  with W a free d × d matrix (init I) and (a, b, c)(t) the outputs of a small MLP of the
  sinusoidal time embedding. For any centred Gaussian path p_t = N(0, α²I + β²Σ) the true time
  score is of this form with W = Qᵀ (Σ = Q diag(λ) Qᵀ), b_k = ½ṡ_k/s_k², a = −½Σ ṡ_k/s_k and
  c_k = 1/s_k (s_k = α² + β²λ_k), whatever the path: the family contains the truth of the
  Gaussian MI task on every path, so what remains is optimisation and the objective.

  The model class of the published DRE-∞ / D3RE Gaussian MI numbers (Choi et al., "Density Ratio
  Estimation via Infinitesimal Classification", AISTATS 2022); for the Gaussian MI tasks only: on
  other data it is a (poor) Gaussian approximation.

  Attributes:
    dim: d.
    width: hidden width of the coefficient MLP of t.
    time_features: sinusoidal features.
    data_head: also return s_x (joint objective).
    time_scale: the embedding sees time_scale·t.
  """

  dim: int
  width: int = 128
  time_features: int = 64
  data_head: bool = False
  time_scale: float = 30.0

  @nn.compact
  def __call__(self, x, t):
    _check_inputs(x, t, self.dim)
    d = self.dim
    w = self.param("w", lambda key, shape: jnp.eye(shape[0]), (d, d))
    y = x @ w.T
    h = sinusoidal_embedding(t, self.time_features, self.time_scale)
    n_out = 1 + d + (d if self.data_head else 0)
    coef = mlp(
      h,
      (self.width, self.width),
      n_out,
      activation=nn.silu,
      out_kernel_init=nn.initializers.zeros,
      names=("t_in", "t_hidden", "t_out"),
    )
    a, b = coef[:, 0], coef[:, 1 : 1 + d]
    s_t = a + jnp.sum(b * y**2, axis=1)
    s_x = None
    if self.data_head:
      c = coef[:, 1 + d :]
      s_x = -(c * y) @ w
    return s_t, s_x
