"""Small discrete targets on {0..q-1}^D with exact answers by enumeration.

W. Guo, J. Choi, Y. Zhu, M. Tao, Y. Chen, "Proximal Diffusion Neural Sampler", ICLR 2026
(arXiv 2510.03824); reference code github.com/AlexandreGUO2001/PDNS (``discrete/``).

``EnumerableTarget`` holds log pi~ of all q^D <= 2^16 states in lexicographic order and gives the
exact log Z, law, marginals, samples, KL(p || pi) and the conditionals pi(x_d = v | x_U), the
ideal masked-diffusion denoiser (mask symbol q). Constructors: ``ising``, ``potts`` (periodic
L x L; on L = 2 each neighbour pair is counted twice, as the formula says) and ``random_table``;
larger lattices: ``lattice_exact_stats`` (streamed enumeration) and ``ising_transfer_matrix``.
The Hamiltonians: docs/methods/pdns.md ("The algorithm").
"""

from __future__ import annotations

import math
from functools import partial

import chex
import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
  "EnumerableTarget",
  "ising",
  "potts",
  "random_table",
  "all_states",
  "state_index",
  "lattice_exact_stats",
  "ising_transfer_matrix",
]

MAX_STATES = 2**16


def all_states(dim: int, q: int) -> np.ndarray:
  """All q^D states in lexicographic order: (q^D, D) int32 (last site fastest)."""
  if q < 2 or dim < 1:
    raise ValueError(f"need q >= 2 and dim >= 1; got q={q}, dim={dim}")
  if q**dim > MAX_STATES:
    raise ValueError(f"q^D = {q}^{dim} exceeds {MAX_STATES} states: too large to enumerate")
  grids = np.meshgrid(*[np.arange(q)] * dim, indexing="ij")
  return np.stack([g.reshape(-1) for g in grids], -1).astype(np.int32)


def state_index(x: jax.Array, q: int) -> jax.Array:
  """Lexicographic index sum_d x_d q^(D-1-d): (..., D) int -> (...,) int32."""
  dim = x.shape[-1]
  powers = jnp.asarray(q ** np.arange(dim - 1, -1, -1), jnp.int32)
  return jnp.sum(x.astype(jnp.int32) * powers, -1)


class EnumerableTarget(flax.struct.PyTreeNode):
  """pi~ on {0..q-1}^D given by its full log-table, index(x) = sum_d x_d q^(D-1-d).

  Attributes:
    log_table: (q^D,) log pi~(x) in lexicographic order (``all_states``).
    dim: D (static).
    q: number of token values (static).
    name: description (static).
  """

  log_table: jax.Array
  dim: int = flax.struct.field(pytree_node=False)
  q: int = flax.struct.field(pytree_node=False)
  name: str = flax.struct.field(pytree_node=False, default="table")

  @classmethod
  def from_log_table(cls, log_table, dim: int, q: int, name: str = "table") -> "EnumerableTarget":
    """Validates log_table (q^D,) finite; stored as float32."""
    t = np.asarray(log_table, np.float64)
    all_states(dim, q)  # validates dim, q and the size
    chex.assert_shape(
      t,
      (q**dim,),
      exception_type=ValueError,
      custom_message=(f"log_table must have shape ({q**dim},) = (q^D,); got {t.shape}"),
    )
    if not np.all(np.isfinite(t)):
      raise ValueError("log_table must be finite")
    return cls(log_table=jnp.asarray(t, jnp.float32), dim=dim, q=q, name=name)

  @property
  def num_states(self) -> int:
    return self.q**self.dim

  def states(self) -> np.ndarray:
    """(q^D, D) int32, the row order of ``log_table``."""
    return all_states(self.dim, self.q)

  def _check_x(self, x: jax.Array, name: str = "x", allow_mask: bool = False) -> None:
    chex.assert_shape(
      x,
      (..., self.dim),
      exception_type=ValueError,
      custom_message=(f"{name} must have shape (..., {self.dim}); got {tuple(x.shape)}"),
    )
    chex.assert_type(
      x,
      int,
      exception_type=ValueError,
      custom_message=f"{name} must hold integer tokens; got dtype {x.dtype}",
    )

  def log_prob_unnorm(self, x: jax.Array) -> jax.Array:
    """log pi~(x): (..., D) int in {0..q-1} -> (...,) float32."""
    self._check_x(x)
    return self.log_table[state_index(x, self.q)]

  @property
  def log_z(self) -> jax.Array:
    """Exact log Z = log sum_x pi~(x) (scalar, computed in float64 on the host)."""
    t = np.asarray(self.log_table, np.float64)
    m = t.max()
    return jnp.asarray(m + math.log(np.exp(t - m).sum()), jnp.float32)

  def log_probs(self) -> np.ndarray:
    """Normalised log pi over all states: (q^D,) float64."""
    t = np.asarray(self.log_table, np.float64)
    m = t.max()
    return t - (m + math.log(np.exp(t - m).sum()))

  def marginals(self) -> np.ndarray:
    """Exact one-site marginals pi(x_d = v): (D, q) float64."""
    p = np.exp(self.log_probs())
    onehot = np.eye(self.q)[self.states()]  # (S, D, q)
    return np.einsum("s,sdv->dv", p, onehot)

  def kl_from(self, log_p: np.ndarray) -> float:
    """Exact KL(p || pi) for a normalised log-table log_p (q^D,) over the same state order."""
    log_p = np.asarray(log_p, np.float64)
    chex.assert_shape(
      log_p,
      (self.num_states,),
      exception_type=ValueError,
      custom_message=(f"log_p must have shape ({self.num_states},); got {log_p.shape}"),
    )
    p = np.exp(log_p)
    lp = np.where(p > 0, log_p, 0.0)
    return float(np.sum(p * (lp - self.log_probs())))

  def sample(self, key: jax.Array, n: int) -> jax.Array:
    """n exact draws from pi: (n, D) int32."""
    idx = jax.random.categorical(key, self.log_table, shape=(n,))
    return jnp.asarray(self.states())[idx]

  def conditional_log_probs(self, z: jax.Array) -> jax.Array:
    """Exact conditionals of pi given the unmasked sites: the ideal denoiser.

    For each partially masked z (mask symbol q) and each site d,
    out[b, d, v] = log pi(x_d = v | x_U = z_U), U the unmasked sites of z[b] (for an unmasked
    site this is the point mass on z_d). Computed with matmuls over the enumerated states.

    Args:
      z: (B, D) int32 in {0..q}.
    Returns:
      (B, D, q) float32 log-probabilities.
    """
    chex.assert_shape(
      z,
      (None, self.dim),
      exception_type=ValueError,
      custom_message=(f"z must have shape (B, {self.dim}); got {tuple(z.shape)}"),
    )
    q, d = self.q, self.dim
    states_oh = jax.nn.one_hot(jnp.asarray(self.states()), q, dtype=jnp.float32)  # (S, D, q)
    states_oh = states_oh.reshape(-1, d * q)
    z_oh = jax.nn.one_hot(z, q + 1, dtype=jnp.float32)[..., :q].reshape(z.shape[0], d * q)
    matches = z_oh @ states_oh.T  # (B, S)
    n_unmasked = jnp.sum(z != q, -1, keepdims=True).astype(jnp.float32)
    consistent = matches > n_unmasked - 0.5
    lp = self.log_table - jnp.max(self.log_table)
    p = jnp.where(consistent, jnp.exp(lp)[None], 0.0)  # (B, S)
    num = (p @ states_oh).reshape(-1, d, q)  # (B, D, q)
    den = jnp.sum(p, -1)[:, None, None]
    return jnp.log(num) - jnp.log(den)


def lattice_pairs(size: int) -> tuple[np.ndarray, np.ndarray]:
  """Periodic right and down neighbour of each site of a size x size lattice: two (L^2,) arrays."""
  i, j = np.meshgrid(np.arange(size), np.arange(size), indexing="ij")
  right = (i * size + (j + 1) % size).reshape(-1)
  down = (((i + 1) % size) * size + j).reshape(-1)
  return right, down


def ising(size: int, beta: float, j: float = 1.0, h: float = 0.0) -> EnumerableTarget:
  """Periodic size x size Ising model, log pi~ = -beta H, tokens {0, 1} (s = 2x - 1),
  H = -J sum_i s_i (s_right(i) + s_down(i)) - h sum_i s_i."""
  if size < 2:
    raise ValueError(f"size must be >= 2; got {size}")
  dim = size * size
  s = 2.0 * all_states(dim, 2) - 1.0
  right, down = lattice_pairs(size)
  energy = -j * np.sum(s * (s[:, right] + s[:, down]), -1) - h * np.sum(s, -1)
  return EnumerableTarget.from_log_table(
    -beta * energy, dim, 2, f"ising(L={size}, beta={beta}, J={j}, h={h})"
  )


def potts(size: int, q: int, beta: float, j: float = 1.0) -> EnumerableTarget:
  """Periodic size x size q-state Potts model, log pi~ = -beta H,
  H = -J sum_i (1[x_i = x_right(i)] + 1[x_i = x_down(i)])."""
  if size < 2:
    raise ValueError(f"size must be >= 2; got {size}")
  dim = size * size
  x = all_states(dim, q)
  right, down = lattice_pairs(size)
  energy = -j * np.sum((x == x[:, right]).astype(np.float64) + (x == x[:, down]), -1)
  return EnumerableTarget.from_log_table(
    -beta * energy, dim, q, f"potts(L={size}, q={q}, beta={beta}, J={j})"
  )


def random_table(seed: int, dim: int, q: int, scale: float = 1.0) -> EnumerableTarget:
  """log pi~ i.i.d. N(0, scale^2) over the q^D states, generated from ``seed``."""
  rng = np.random.default_rng(seed)
  return EnumerableTarget.from_log_table(
    scale * rng.standard_normal(q**dim), dim, q, f"random_table(seed={seed}, D={dim}, q={q})"
  )


MAX_STREAM_BITS = 30


@partial(jax.jit, static_argnames=("size", "q", "model", "chunk"))
def _lattice_stream(beta, j, h, *, size: int, q: int, model: str, chunk: int):
  dim = size * size
  total = q**dim
  right, down = lattice_pairs(size)
  powers = jnp.asarray(q ** np.arange(dim - 1, -1, -1), jnp.int32)
  n_chunks = total // chunk

  def body(carry, c):
    m, z, hist, corr, en = carry
    idx = c * chunk + jnp.arange(chunk, dtype=jnp.int32)
    x = (idx[:, None] // powers) % q  # (C, D)
    if model == "ising":
      s = 2.0 * x.astype(jnp.float32) - 1.0
      energy = -j * jnp.sum(s * (s[:, right] + s[:, down]), -1) - h * jnp.sum(s, -1)
      feat = s  # (C, D)
      n_up = jnp.sum(x, -1)
    else:
      energy = -j * jnp.sum(
        (x == x[:, right]).astype(jnp.float32) + (x == x[:, down]).astype(jnp.float32), -1
      )
      feat = jax.nn.one_hot(x, q, dtype=jnp.float32).reshape(chunk, dim * q)
      n_up = jnp.max(jnp.sum(jax.nn.one_hot(x, q, dtype=jnp.int32), 1), -1)  # majority count
    lw = -beta * energy
    m_new = jnp.maximum(m, jnp.max(lw))
    scale = jnp.exp(m - m_new)
    w = jnp.exp(lw - m_new)
    z = z * scale + jnp.sum(w)
    hist = hist * scale + jax.ops.segment_sum(w, n_up, num_segments=dim + 1)
    corr = corr * scale + (feat * w[:, None]).T @ feat
    en = en * scale + jnp.sum(w * energy)
    return (m_new, z, hist, corr, en), None

  nf = dim if model == "ising" else dim * q
  init = (
    jnp.asarray(-1e30, jnp.float32),
    jnp.zeros((), jnp.float32),
    jnp.zeros((dim + 1,), jnp.float32),
    jnp.zeros((nf, nf), jnp.float32),
    jnp.zeros((), jnp.float32),
  )
  (m, z, hist, corr, en), _ = jax.lax.scan(body, init, jnp.arange(n_chunks, dtype=jnp.int32))
  return m + jnp.log(z), hist / z, corr / z, en / z


def lattice_exact_stats(
  size: int,
  beta: float,
  model: str = "ising",
  q: int = 2,
  j: float = 1.0,
  h: float = 0.0,
  chunk: int = 4096,
) -> dict:
  """Exact statistics of a periodic size x size Ising or Potts model by streamed enumeration.

  Enumerates all q^D states in chunks of ``chunk`` inside one jitted ``lax.scan`` (memory
  O(chunk D + D^2), no table), with an online log-sum-exp rescaling. The Hamiltonians are those
  of ``ising`` / ``potts`` (Potts: no field, ``h`` ignored). Accumulation is float32.

  Args:
    size: L; q^(L^2) must be <= 2^30 (e.g. Ising up to 5 x 5).
    beta, j, h: inverse temperature, coupling, field.
    model: "ising" or "potts".
    chunk: states per scan step (a power of q dividing q^D is required).
  Returns:
    dict with ``log_z``, ``mean_energy``, and

    * Ising: ``mag_dist`` (D + 1,) P(M = 2k - D), ``abs_mag`` E|M| / D, ``p_neg`` P(M < 0),
      ``p_pos`` P(M > 0), ``corr`` (D, D) E s_i s_j;
    * Potts: ``majority_dist`` (D + 1,) P(max_v #{i: x_i = v} = k), ``corr`` (D, D)
      P(x_i = x_j), ``order`` E (q max_v n_v / D - 1) / (q - 1).
  """
  if model not in ("ising", "potts"):
    raise ValueError(f"model must be 'ising' or 'potts'; got {model!r}")
  if model == "ising" and q != 2:
    raise ValueError(f"Ising needs q = 2; got q={q}")
  if size < 2 or q < 2:
    raise ValueError(f"need size >= 2 and q >= 2; got size={size}, q={q}")
  dim = size * size
  if dim * math.log2(q) > MAX_STREAM_BITS:
    raise ValueError(f"q^D = {q}^{dim} exceeds 2^{MAX_STREAM_BITS} states")
  total = q**dim
  chunk = min(chunk, total)
  if total % chunk:
    raise ValueError(f"chunk must divide q^D = {total}; got {chunk}")
  log_z, dist, corr, en = _lattice_stream(
    jnp.float32(beta), jnp.float32(j), jnp.float32(h), size=size, q=q, model=model, chunk=chunk
  )
  dist = np.asarray(dist, np.float64)
  out = {"log_z": float(log_z), "mean_energy": float(en)}
  k = np.arange(dim + 1)
  if model == "ising":
    mag = 2 * k - dim
    out.update(
      mag_dist=dist,
      abs_mag=float(np.sum(dist * np.abs(mag)) / dim),
      p_neg=float(dist[mag < 0].sum()),
      p_pos=float(dist[mag > 0].sum()),
      corr=np.asarray(corr, np.float64),
    )
  else:
    c = np.asarray(corr, np.float64).reshape(dim, q, dim, q)
    out.update(
      majority_dist=dist,
      corr=np.einsum("ivjv->ij", c),
      order=float(np.sum(dist * (q * k / dim - 1) / (q - 1))),
    )
  return out


def ising_transfer_matrix(size: int, beta: float, j: float = 1.0, h: float = 0.0) -> dict:
  """Exact log Z and magnetisation law of the periodic size x size Ising model by row transfer.

  Rows are the 2^L spin configurations; T[a, b] = exp(beta (e_row(a) / 2 + e_row(b) / 2 +
  J sum_i a_i b_i)) with e_row(a) = J sum_i a_i a_{i+1} + h sum_i a_i (periodic), so
  Z = Tr T^L. The magnetisation law comes from the generating function: with the per-site factor
  e^{i w [s = +1]}, w_l = 2 pi l / (D + 1), Tr T(w_l)^L = sum_k Z_k e^{i w_l k} (k = number of up
  spins), inverted by a discrete Fourier transform (absolute precision ~1e-13 of the largest
  Z_k). float64 numpy; practical for L <= 10 (2^L x 2^L matrices).

  Returns:
    dict with ``log_z``, ``mag_dist`` (D + 1,) P(M = 2k - D), ``abs_mag`` E|M| / D, ``p_neg``,
    ``p_pos``.
  """
  if not 2 <= size <= 10:
    raise ValueError(f"size must be in [2, 10]; got {size}")
  dim = size * size
  rows = 2.0 * all_states(size, 2).astype(np.float64) - 1.0  # (R, L)
  e_row = j * np.sum(rows * np.roll(rows, -1, axis=1), -1) + h * np.sum(rows, -1)
  # (on L = 2 the wrap counts each bond twice, as in ``ising``)
  log_t = beta * (0.5 * e_row[:, None] + 0.5 * e_row[None] + j * rows @ rows.T)
  lam = np.max(np.abs(np.linalg.eigvalsh(np.exp(log_t - log_t.max()))))
  log_scale = log_t.max() + math.log(lam)  # per-row log scale
  t_scaled = np.exp(log_t - log_scale)  # spectral radius 1
  n_up = np.sum(rows > 0, -1)
  omegas = 2 * np.pi * np.arange(dim + 1) / (dim + 1)
  gen = np.empty(dim + 1, np.complex128)
  for l, w in enumerate(omegas):
    half = np.exp(0.5j * w * n_up)  # (R,) sqrt row factor
    tw = t_scaled * half[:, None] * half[None]
    gen[l] = np.trace(np.linalg.matrix_power(tw, size))
  k = np.arange(dim + 1)
  zk = np.real(np.exp(-1j * np.outer(k, omegas)) @ gen) / (dim + 1)  # Z_k / scale^L
  z = np.real(gen[0])
  dist = np.clip(zk / z, 0.0, None)
  dist = dist / dist.sum()
  mag = 2 * k - dim
  return {
    "log_z": float(size * log_scale + math.log(z)),
    "mag_dist": dist,
    "abs_mag": float(np.sum(dist * np.abs(mag)) / dim),
    "p_neg": float(dist[mag < 0].sum()),
    "p_pos": float(dist[mag > 0].sum()),
  }
