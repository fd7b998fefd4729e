"""Particle-system targets for PDNS: DW-4 and Lennard-Jones LJ-13 / LJ-55.

W. Guo, J. Choi, Y. Zhu, M. Tao, Y. Chen, "Proximal Diffusion Neural Sampler", ICLR 2026
(arXiv 2510.03824); reference code github.com/AlexandreGUO2001/PDNS. Energies follow Köhler,
Klein, Noé, "Equivariant Flows" (ICML 2020) in the conventions of the iDEM (Akhound-Sadegh et al.
2024) and adjoint-sampling / ASBS code bases.

Configurations are flat (..., n s) with particle i at x[..., i s:(i + 1) s]. The energies are
invariant under translations, rotations and permutations, so the samplers use the centre-of-mass
free reference: ``remove_com``, ``com_free_normal``, ``com_free_normal_log_prob`` ((n - 1) s
degrees of freedom). No exact log Z or samples exist (``mcmc`` makes reference samples). The
energies: docs/methods/pdns.md ("The algorithm").
"""

from __future__ import annotations

import math

import chex
import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
  "ParticleSystem",
  "dw4",
  "lj13",
  "lj55",
  "remove_com",
  "com_free_normal",
  "com_free_normal_log_prob",
  "pair_distances",
]


def _check(x: jax.Array, n_particles: int, spatial_dim: int) -> None:
  chex.assert_shape(
    x,
    (..., n_particles * spatial_dim),
    exception_type=ValueError,
    custom_message=(
      f"x must have shape (..., {n_particles * spatial_dim}) = (..., n * s); got {tuple(x.shape)}"
    ),
  )


def remove_com(x: jax.Array, n_particles: int, spatial_dim: int) -> jax.Array:
  """Subtract the centre of mass: (..., n s) -> (..., n s) with zero mean over particles."""
  _check(x, n_particles, spatial_dim)
  p = x.reshape(*x.shape[:-1], n_particles, spatial_dim)
  return (p - jnp.mean(p, -2, keepdims=True)).reshape(x.shape)


def com_free_normal(
  key: jax.Array, n: int, n_particles: int, spatial_dim: int, dtype=jnp.float32
) -> jax.Array:
  """n draws of standard Gaussian noise projected onto the zero-CoM subspace: (n, n_p s).

  The projection of N(0, I) is the standard Gaussian of that (n_p - 1) s dimensional subspace.
  """
  d = n_particles * spatial_dim
  z = jax.random.normal(key, (n * d,), dtype).reshape(n, d)
  return remove_com(z, n_particles, spatial_dim)


def com_free_normal_log_prob(
  x: jax.Array, n_particles: int, spatial_dim: int, sigma: float = 1.0
) -> jax.Array:
  """log density of N(0, sigma^2 I) restricted to the zero-CoM subspace: (..., n s) -> (...,).

  Uses (n - 1) s degrees of freedom; x is assumed CoM-free (its CoM component is ignored).
  """
  x0 = remove_com(x, n_particles, spatial_dim)
  dof = (n_particles - 1) * spatial_dim
  return -0.5 * jnp.sum(x0**2, -1) / sigma**2 - 0.5 * dof * math.log(2 * math.pi * sigma**2)


def pair_distances(x: jax.Array, n_particles: int, spatial_dim: int) -> jax.Array:
  """Distances r_ij for i < j: (..., n s) -> (..., n (n - 1) / 2)."""
  _check(x, n_particles, spatial_dim)
  p = x.reshape(*x.shape[:-1], n_particles, spatial_dim)
  i, j = np.triu_indices(n_particles, 1)
  diff = p[..., i, :] - p[..., j, :]
  return jnp.sqrt(jnp.sum(diff**2, -1))


class ParticleSystem(flax.struct.PyTreeNode):
  """Pairwise-potential particle target (static configuration only), log pi~ = -E / temperature.

  DW: ``E = sum_{i<j} a u_ij + b u_ij^2 + c u_ij^4``, ``u_ij = r_ij - r0``. LJ:
  ``E = eps sum_{i<j} [(rm / r_ij)^12 - 2 (rm / r_ij)^6] + k/2 sum_i |x_i - x_bar|^2``,
  k = ``oscillator_scale``.

  Attributes:
    kind: "dw" (double-well pair potential) or "lj" (Lennard-Jones + CoM harmonic).
    n_particles, spatial_dim: n and s; dim = n s.
    temperature: log pi~ = -E / temperature.
    a, b, c, r0: DW parameters.
    eps, rm, oscillator_scale: LJ parameters (oscillator_scale k of the harmonic term).
    min_dist: distances are clamped below at this value in the LJ term (0 = no clamp), a guard
      against overflow at r -> 0 that iDEM-style code uses; keep 0 for exact energies.
  """

  kind: str = flax.struct.field(pytree_node=False)
  n_particles: int = flax.struct.field(pytree_node=False)
  spatial_dim: int = flax.struct.field(pytree_node=False)
  temperature: float = flax.struct.field(pytree_node=False, default=1.0)
  a: float = flax.struct.field(pytree_node=False, default=0.0)
  b: float = flax.struct.field(pytree_node=False, default=-4.0)
  c: float = flax.struct.field(pytree_node=False, default=0.9)
  r0: float = flax.struct.field(pytree_node=False, default=4.0)
  eps: float = flax.struct.field(pytree_node=False, default=1.0)
  rm: float = flax.struct.field(pytree_node=False, default=1.0)
  oscillator_scale: float = flax.struct.field(pytree_node=False, default=1.0)
  min_dist: float = flax.struct.field(pytree_node=False, default=0.0)

  def __post_init__(self):
    if self.kind not in ("dw", "lj"):
      raise ValueError(f"kind must be 'dw' or 'lj'; got {self.kind!r}")
    if self.n_particles < 2 or self.spatial_dim < 1 or self.temperature <= 0:
      raise ValueError(
        f"need n_particles >= 2, spatial_dim >= 1, temperature > 0; got "
        f"{self.n_particles}, {self.spatial_dim}, {self.temperature}"
      )

  @property
  def dim(self) -> int:
    return self.n_particles * self.spatial_dim

  def energy(self, x: jax.Array) -> jax.Array:
    """E(x): (..., n s) -> (...,) (jitted)."""
    _check(x, self.n_particles, self.spatial_dim)
    return _jit_energy(self, x)

  def _energy(self, x: jax.Array) -> jax.Array:
    r = pair_distances(x, self.n_particles, self.spatial_dim)
    if self.kind == "dw":
      u = r - self.r0
      return jnp.sum(self.a * u + self.b * u**2 + self.c * u**4, -1)
    if self.min_dist > 0:
      r = jnp.maximum(r, self.min_dist)
    inv6 = (self.rm / r) ** 6
    lj = self.eps * jnp.sum(inv6**2 - 2 * inv6, -1)
    x0 = remove_com(x, self.n_particles, self.spatial_dim)
    return lj + 0.5 * self.oscillator_scale * jnp.sum(x0**2, -1)

  def log_prob_unnorm(self, x: jax.Array) -> jax.Array:
    """-E(x) / temperature: (..., n s) -> (...,)."""
    return -self.energy(x) / self.temperature

  def remove_com(self, x: jax.Array) -> jax.Array:
    return remove_com(x, self.n_particles, self.spatial_dim)

  def com_free_normal(self, key: jax.Array, n: int) -> jax.Array:
    return com_free_normal(key, n, self.n_particles, self.spatial_dim)

  def pair_distances(self, x: jax.Array) -> jax.Array:
    return pair_distances(x, self.n_particles, self.spatial_dim)


@jax.jit
def _jit_energy(target: ParticleSystem, x: jax.Array) -> jax.Array:
  return target._energy(x)


def dw4(temperature: float = 1.0) -> ParticleSystem:
  """DW-4: 4 particles in 2-D, a = 0, b = -4, c = 0.9, r0 = 4."""
  return ParticleSystem(kind="dw", n_particles=4, spatial_dim=2, temperature=temperature)


def lj13(temperature: float = 1.0, oscillator_scale: float = 1.0) -> ParticleSystem:
  """LJ-13: 13 particles in 3-D (d = 39), eps = r_m = 1, harmonic CoM term."""
  return ParticleSystem(
    kind="lj",
    n_particles=13,
    spatial_dim=3,
    temperature=temperature,
    oscillator_scale=oscillator_scale,
  )


def lj55(temperature: float = 1.0, oscillator_scale: float = 1.0) -> ParticleSystem:
  """LJ-55: 55 particles in 3-D (d = 165)."""
  return ParticleSystem(
    kind="lj",
    n_particles=55,
    spatial_dim=3,
    temperature=temperature,
    oscillator_scale=oscillator_scale,
  )
