"""Density-estimation data for MinPV: 2-D toys, scikit-learn digits, UCI tabular loaders.

Chen et al., "Don't Forget Its Variance! The Minimum Path Variance Principle …" (ICLR 2026),
reference code github.com/Hoemr/OpenDRE: likelihoods with p0 = N(0, I) as log p̂1 = log r̂ +
log N(·; 0, I). The model works on preprocessed coordinates z = T(x); the reported likelihood is
in data space, log p(x) = log p_z(T(x)) + log|det ∂T/∂x|, so every preprocessing step below
returns its log-Jacobian. Holds the toys (``TOYS``, ``sample_toy``, ``toy_moments``,
``toy_log_density``), the digits pipeline (``load_digits_pixels``, ``dequantize_digits``,
``logit_transform``, ``Standardizer``, ``split_rows``) and ``load_uci``. The tasks and their
preprocessing: docs/methods/minpv.md ("The algorithm").
"""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np

from iclr26_jax.core.datacheck import DataError, load_npy, open_npz, require_array, require_finite

SPLITS = ("train", "val", "test")

TOYS = ("two_moons", "eight_gaussians", "checkerboard")
EIGHT_RADIUS = 2.0  # eight_gaussians: centres on the circle of this radius
EIGHT_STD = 0.3  # eight_gaussians: isotropic component std
MOONS_NOISE = 0.1  # two_moons: isotropic Gaussian noise std
DIGITS_LEVELS = 17  # digits pixel values 0 … 16
LOGIT_LAMBDA = 0.05  # RealNVP logit-transform margin


# ------------------------------------------------------------------------------------ 2-D toys
def sample_toy(name: str, rng: np.random.Generator, n: int) -> np.ndarray:
  """(n, 2) float64 draws of a 2-D toy density.

  - two_moons: (cos θ, sin θ) or (1 − cos θ, ½ − sin θ) with equal probability, θ ~ U(0, π),
    minus the mean (½, ¼), plus N(0, MOONS_NOISE² I).
  - eight_gaussians: equal mixture of N(R (cos 2πk/8, sin 2πk/8), EIGHT_STD² I), R = EIGHT_RADIUS.
  - checkerboard: uniform on the 8 dark 2 × 2 squares of [−4, 4]² where ⌊x/2⌋ + ⌊y/2⌋ is even
    (density 1/32 there).
  """
  n = int(n)
  if name == "two_moons":
    th = rng.uniform(0.0, np.pi, n)
    upper = rng.random(n) < 0.5
    x = np.where(upper, np.cos(th), 1.0 - np.cos(th)) - 0.5
    y = np.where(upper, np.sin(th), 0.5 - np.sin(th)) - 0.25
    return np.stack([x, y], 1) + MOONS_NOISE * rng.standard_normal((n, 2))
  if name == "eight_gaussians":
    k = rng.integers(0, 8, n)
    c = EIGHT_RADIUS * np.stack([np.cos(2 * np.pi * k / 8), np.sin(2 * np.pi * k / 8)], 1)
    return c + EIGHT_STD * rng.standard_normal((n, 2))
  if name == "checkerboard":
    x = rng.uniform(-4.0, 4.0, n)
    # In the column of width 2 containing x, the dark squares have y-rows of the same parity.
    row = 2 * rng.integers(0, 2, n) + (np.floor(x / 2.0).astype(int) % 2)  # rows 0..3
    y = -4.0 + 2.0 * row + rng.uniform(0.0, 2.0, n)
    return np.stack([x, y], 1)
  raise ValueError(f"toy name must be one of {TOYS}; got {name!r}")


def toy_moments(name: str) -> tuple[np.ndarray, np.ndarray]:
  """Analytic mean (2,) and covariance (2, 2) of a toy."""
  if name == "two_moons":
    # Uncentred arcs (x̃, ỹ) = (x + ½, y + ¼), θ ~ U(0, π): E cos θ = 0, E sin θ = 2/π,
    # E cos² θ = E sin² θ = ½, E cos θ sin θ = 0. Upper (cos θ, sin θ), lower
    # (1 − cos θ, ½ − sin θ).
    ex2 = 0.5 * (0.5 + 1.5) - 0.5**2  # E x̃² − (E x̃)², E(1 − cos)² = 3/2
    ey2 = 0.5 * (0.5 + (0.75 - 2.0 / np.pi)) - 0.25**2  # E(½ − sin)² = ¾ − 2/π
    exy = 0.5 * (0.0 + (0.5 - 2.0 / np.pi)) - 0.5 * 0.25  # E(1 − cos)(½ − sin) = ½ − 2/π
    cov = np.array([[ex2, exy], [exy, ey2]]) + MOONS_NOISE**2 * np.eye(2)
    return np.zeros(2), cov
  if name == "eight_gaussians":
    return np.zeros(2), (0.5 * EIGHT_RADIUS**2 + EIGHT_STD**2) * np.eye(2)
  if name == "checkerboard":
    # Each marginal is U(−4, 4) (variance 16/3). The 8 squares have centres (x, y) with
    # xy ∈ {9, −3, 1, −3, −3, 1, −3, 9}, mean 1, and a square's own x, y are independent, so
    # Cov(x, y) = 1.
    return np.zeros(2), np.array([[16.0 / 3.0, 1.0], [1.0, 16.0 / 3.0]])
  raise ValueError(f"toy name must be one of {TOYS}; got {name!r}")


def toy_log_density(name: str, x: np.ndarray) -> np.ndarray | None:
  """Exact log-density (n,) at x (n, 2), or None where no closed form is offered (two_moons)."""
  x = np.asarray(x, np.float64)
  if name == "eight_gaussians":
    ang = 2 * np.pi * np.arange(8) / 8
    c = EIGHT_RADIUS * np.stack([np.cos(ang), np.sin(ang)], 1)
    sq = np.sum((x[:, None, :] - c[None]) ** 2, axis=2)
    lp = -0.5 * sq / EIGHT_STD**2 - np.log(2 * np.pi * EIGHT_STD**2) - np.log(8.0)
    m = lp.max(1)
    return m + np.log(np.sum(np.exp(lp - m[:, None]), 1))
  if name == "checkerboard":
    inside = np.all(np.abs(x) <= 4.0, 1)
    dark = (np.floor(x[:, 0] / 2.0) + np.floor(x[:, 1] / 2.0)) % 2 == 0
    return np.where(inside & dark, -np.log(32.0), -np.inf)
  if name == "two_moons":
    return None
  raise ValueError(f"toy name must be one of {TOYS}; got {name!r}")


# ------------------------------------------------------------------------------ preprocessing
class Standardizer(NamedTuple):
  """z = (x − mean)/std per column; log|det ∂z/∂x| = −Σ log std."""

  mean: np.ndarray
  std: np.ndarray

  @classmethod
  def fit(cls, x: np.ndarray, min_std: float = 1e-6) -> "Standardizer":
    x = np.asarray(x, np.float64)
    return cls(x.mean(0), np.maximum(x.std(0), min_std))

  def forward(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x (n, d) → (z (n, d), log-Jacobian (n,))."""
    z = (np.asarray(x, np.float64) - self.mean) / self.std
    return z, np.full(z.shape[0], -np.sum(np.log(self.std)))


def logit_transform(v: np.ndarray, lam: float = LOGIT_LAMBDA) -> tuple[np.ndarray, np.ndarray]:
  """w = logit(λ + (1 − 2λ) v) for v ∈ (0, 1); returns (w (n, d), log|det ∂w/∂v| (n,))."""
  s = lam + (1.0 - 2.0 * lam) * np.asarray(v, np.float64)
  w = np.log(s) - np.log1p(-s)
  logdet = np.sum(np.log1p(-2.0 * lam) - np.log(s) - np.log1p(-s), axis=1)
  return w, logdet


def dequantize_digits(pixels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
  """Integer pixels k ∈ {0 … 16} (n, d) → v = (k + u)/17 ∈ (0, 1), u ~ U(0, 1)."""
  k = np.asarray(pixels, np.float64)
  return (k + rng.random(k.shape)) / DIGITS_LEVELS


def load_digits_pixels() -> np.ndarray:
  """(1797, 64) integer pixels of scikit-learn's bundled digits (no download)."""
  from sklearn.datasets import load_digits

  return np.asarray(load_digits().data, np.float64)


def split_rows(n: int, test_fraction: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
  """A fixed random split of row indices into (train, test)."""
  if not 0.0 < test_fraction < 1.0:
    raise ValueError(f"test_fraction must be in (0, 1); got {test_fraction}")
  perm = np.random.default_rng(seed).permutation(n)
  n_test = max(1, int(round(n * test_fraction)))
  return np.sort(perm[n_test:]), np.sort(perm[:n_test])


# --------------------------------------------------------------------------------------- UCI
UCI_LAYOUT = (
  "a folder with train.npy, val.npy, test.npy (float arrays (n, d), the MAF/NSF "
  "preprocessed layout, e.g. <root>/power/), or one .npz file with arrays "
  "'train', 'val', 'test', or one .csv file of floats (split 80/10/10 in file order)"
)


def load_uci(path: str) -> dict[str, np.ndarray]:
  """Loads a preprocessed UCI benchmark (POWER, GAS, HEPMASS, MINIBOONE, BSDS300) in the layout
  of Papamakarios et al. (MAF) as saved by Durkan et al. (NSF, github.com/bayesiains/nsf).

  Args:
    path: folder, ``.npz`` or ``.csv`` (see ``UCI_LAYOUT``).
  Returns:
    ``{"train", "val", "test"}`` float64 arrays (n_split, d).
  Raises:
    FileNotFoundError: ``path`` is empty or missing, or a folder lacks train.npy / test.npy;
      the message says where to put the files.
    ValueError: arrays that are not 2-D floats of one width.
  """
  if not path:
    raise FileNotFoundError(f"data.path is empty; set it to {UCI_LAYOUT}")
  if not os.path.exists(path):
    raise FileNotFoundError(f"UCI data not found at {path!r}; put there {UCI_LAYOUT}")
  if os.path.isdir(path):
    out = {}
    for split in ("train", "val", "test"):
      f = os.path.join(path, f"{split}.npy")
      if os.path.exists(f):
        out[split] = load_npy(f)  # a garbage or pickled file: one line naming it
    missing = [s for s in ("train", "test") if s not in out]
    if missing:
      raise FileNotFoundError(
        f"{path!r} lacks {', '.join(s + '.npy' for s in missing)}; expected {UCI_LAYOUT}"
      )
  elif path.endswith(".npz"):
    out = {k: v for k, v in open_npz(path, required=("train", "test")).items() if k in SPLITS}
  elif path.endswith(".csv"):
    try:
      arr = np.loadtxt(path, delimiter=",", dtype=np.float64)
    except ValueError:
      arr = np.loadtxt(path, delimiter=",", dtype=np.float64, skiprows=1)  # a header line
    arr = arr.reshape(arr.shape[0], -1)
    require_finite(arr, path)  # rows counted in the file, before the split
    n = arr.shape[0]
    a, b = int(0.8 * n), int(0.9 * n)
    if a < 1 or b >= n:
      raise ValueError(f"{path!r} has too few rows ({n}) for an 80/10/10 split")
    out = {"train": arr[:a], "val": arr[a:b], "test": arr[b:]}
  else:
    raise ValueError(f"data.path {path!r}: expected {UCI_LAYOUT}")
  out.setdefault("val", out["train"][:0])
  widths = {k: (v.ndim, v.shape[-1] if v.ndim else 0) for k, v in out.items()}
  if any(nd != 2 for nd, _ in widths.values()) or len({w for _, w in widths.values()}) != 1:
    raise DataError(
      f"UCI splits must be 2-D arrays of one width; got { {k: v.shape for k, v in out.items()} }"
    )
  for k, v in out.items():  # NaN/inf would otherwise surface as a NonFiniteError at step 1
    src = os.path.join(path, f"{k}.npy") if os.path.isdir(path) else f"{path}[{k!r}]"
    require_array(v, src, kind="floating", min_rows=0 if k == "val" else 1)  # no int cast
    require_finite(v, src)
  return {k: np.asarray(v, np.float64) for k, v in out.items()}
