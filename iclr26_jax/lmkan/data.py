"""Offline data for lmKAN experiments (nothing is downloaded at run time).

lmKAN (Pozdnyakov & Schwaller, ICLR 2026; reference code github.com/schwallergroup/lmkan). Holds the
methane-like surrogate (`methane_like_batch`, the offline stand-in for the paper's methane data set:
12 raw H coordinates around C, standardised surrogate energy `methane_energy`), an extended-XYZ
loader (`load_extxyz`) and `load_methane` for the paper's data set (Materials Cloud Archive record
2020.105), the 32-D random-teacher task of the paper's Fig. 1 (`make_teacher`, `teacher_batch`),
scikit-learn's digits (`load_digits`) and CIFAR-10 python-pickle batches from a local path
(`load_cifar10`).

The tasks: docs/methods/lmkan.md ("Configuration and logged metrics").
"""

from __future__ import annotations

import functools
import os
import pickle
import shlex
from typing import NamedTuple, Sequence

import chex
import jax
import jax.numpy as jnp
import numpy as np

from iclr26_jax.core.datacheck import DataError

__all__ = [
  "METHANE_RECORD",
  "methane_energy",
  "methane_geometry",
  "methane_like_raw",
  "methane_like_stats",
  "methane_like_batch",
  "methane_like_test_set",
  "ExtXYZData",
  "load_extxyz",
  "load_methane",
  "TeacherTask",
  "make_teacher",
  "teacher_apply",
  "teacher_batch",
  "teacher_test_set",
  "load_digits",
  "load_cifar10_batch",
  "load_cifar10",
]

# -- Methane-like surrogate ------------------------------------------------------------------------

MORSE_R0 = 1.09  # Å, C–H equilibrium distance
MORSE_A = 1.8  # Å⁻¹
HH_REPULSION = 3.0  # prefactor of exp(−2 r_ij)
HH_DECAY = 2.0  # Å⁻¹
ANGULAR_K = 0.5  # prefactor of (cos θ_ij + 1/3)²
R_MIN, R_MAX = 0.5, 3.0  # Å, radii of the H atoms around C
STATS_SEED = 20260101  # fixed seed of the standardisation sample
STATS_SAMPLES = 1 << 18
TEST_SEED = 20260202  # fixed seed of the methane-like test set
TEST_SAMPLES = 8192
_PAIRS = tuple((i, j) for i in range(4) for j in range(i + 1, 4))


def _as_key(key_or_seed):
  if isinstance(key_or_seed, (int, np.integer)) and not isinstance(key_or_seed, bool):
    return jax.random.key(int(key_or_seed))
  return key_or_seed


def _check_n(n, name="n"):
  if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
    raise ValueError(f"{name} must be a positive int, got {n!r}.")
  return int(n)


def methane_energy(h, xp=jnp):
  """Surrogate energy of CH₄ geometries (C at the origin).

  E = Σ_i (1 − exp(−a(r_i − r0)))² + Σ_{i<j} 3·exp(−2 r_ij) + 0.5·Σ_{i<j} (cos θ_ij + 1/3)²,
  r0 = 1.09 Å, a = 1.8 Å⁻¹; r_i C–H distances, r_ij H–H distances, θ_ij H–C–H angles.

  Args:
    h: (N, 4, 3) H positions relative to C (Å).
    xp: array module, `jax.numpy` (default, jittable) or `numpy`.
  Returns:
    (N,) energies.
  """
  chex.assert_shape(
    h,
    (None, 4, 3),
    exception_type=ValueError,
    custom_message=f"h must have shape (N, 4, 3), got {tuple(h.shape)}.",
  )
  r = xp.sqrt(xp.sum(h * h, axis=-1))  # (N, 4)
  e = xp.sum((1.0 - xp.exp(-MORSE_A * (r - MORSE_R0))) ** 2, axis=-1)
  u = h / r[..., None]
  for i, j in _PAIRS:
    rij = xp.sqrt(xp.sum((h[:, i] - h[:, j]) ** 2, axis=-1))
    cos = xp.sum(u[:, i] * u[:, j], axis=-1)
    e = e + HH_REPULSION * xp.exp(-HH_DECAY * rij) + ANGULAR_K * (cos + 1.0 / 3.0) ** 2
  return e


def methane_geometry(key, n: int):
  """Random CH₄ geometries: 4 H at directions uniform on the sphere and radii U[0.5, 3] Å.

  Args:
    key: JAX PRNG key or int seed.
    n: number of molecules (static).
  Returns:
    (n, 4, 3) float32 H positions relative to C.
  """
  n = _check_n(n)
  kd, kr = jax.random.split(_as_key(key))
  d = jax.random.normal(kd, (n, 4, 3))
  d = d / jnp.linalg.norm(d, axis=-1, keepdims=True)
  r = jax.random.uniform(kr, (n, 4, 1), minval=R_MIN, maxval=R_MAX)
  return d * r


def methane_like_raw(key, n: int):
  """Unstandardised surrogate samples.

  Args:
    key: JAX PRNG key or int seed. n: batch size (static).
  Returns:
    x (n, 12) float32 H coordinates (H1x, H1y, H1z, H2x, …), e (n,) float32 energies.
  """
  h = methane_geometry(key, n)
  return h.reshape(h.shape[0], 12), methane_energy(h)


@functools.lru_cache(maxsize=None)
def methane_like_stats(seed: int = STATS_SEED, n: int = STATS_SAMPLES) -> tuple[float, float]:
  """Mean and std of the surrogate energy from a large fixed-seed sample (host numpy, float64, cached).

  Computed in numpy so it can be called while tracing a jitted function.

  Returns:
    (mean, std) Python floats.
  """
  n = _check_n(n)
  rng = np.random.default_rng(seed)
  d = rng.standard_normal((n, 4, 3))
  d /= np.linalg.norm(d, axis=-1, keepdims=True)
  h = d * rng.uniform(R_MIN, R_MAX, (n, 4, 1))
  e = methane_energy(h, xp=np)
  return float(e.mean()), float(e.std())


def methane_like_batch(key, n: int):
  """A fresh standardised surrogate batch (jittable; training draws a new one every step).

  Args:
    key: JAX PRNG key or int seed. n: batch size (static).
  Returns:
    x (n, 12) float32, y (n, 1) float32 standardised energies (shared train/test statistics).
  """
  return _methane_like_batch(_as_key(key), _check_n(n))


@functools.partial(jax.jit, static_argnums=1)
def _methane_like_batch(key, n):
  x, e = methane_like_raw(key, n)
  mean, std = methane_like_stats()  # host floats, constants of the trace
  return x, ((e - mean) / std)[:, None]


def methane_like_test_set(seed: int = TEST_SEED, n: int = TEST_SAMPLES):
  """The fixed surrogate test set (default: 8192 samples from a seed separate from training).

  Returns:
    x (n, 12) float32, y (n, 1) float32 (standardised), as numpy arrays.
  """
  x, y = methane_like_batch(jax.random.key(int(seed)), n)
  return np.asarray(x), np.asarray(y)


# -- Extended XYZ ----------------------------------------------------------------------------------

METHANE_RECORD = (
  "the 'randomly-displaced methane configurations' of Pozdnyakov, Willatt & Ceriotti, "
  "Materials Cloud Archive record 2020.105 (DOI 10.24435/materialscloud:qy-dp); download "
  "it on a machine with internet access and pass the extended-XYZ file's local path"
)


class ExtXYZData(NamedTuple):
  """Frames of an extended-XYZ file.

  Attributes:
    species: tuple (per frame) of tuples of element symbols.
    positions: tuple of (n_atoms, 3) float64 arrays (Å).
    energies: (n_frames,) float64.
    forces: tuple of (n_atoms, 3) float64 arrays, or None when the file has no forces column.
  """

  species: tuple
  positions: tuple
  energies: np.ndarray
  forces: tuple | None


_TYPE_WIDTH_OK = {"S", "R", "I", "L"}


def _parse_comment(line: str, lineno: int, path) -> dict:
  try:
    tokens = shlex.split(line, posix=True)
  except ValueError as e:
    raise ValueError(f"{path}:{lineno}: cannot parse the comment line ({e}).") from None
  info = {}
  for tok in tokens:
    if "=" in tok:
      k, v = tok.split("=", 1)
      info[k.strip()] = v.strip()
    else:
      info[tok.strip()] = "T"
  return info


def _parse_properties(spec: str, lineno: int, path):
  parts = spec.split(":")
  if len(parts) % 3:
    raise ValueError(f"{path}:{lineno}: malformed Properties={spec!r} (name:type:count triples).")
  cols, start = {}, 0
  for name, typ, cnt in zip(parts[0::3], parts[1::3], parts[2::3]):
    if typ not in _TYPE_WIDTH_OK or not cnt.isdigit():
      raise ValueError(f"{path}:{lineno}: malformed Properties entry {name}:{typ}:{cnt}.")
    cols[name] = (start, int(cnt))
    start += int(cnt)
  return cols, start


def load_extxyz(path, energy_key: str = "energy", forces_key: str = "forces") -> ExtXYZData:
  """Reads an extended-XYZ file (the format written by ASE) with per-frame energies.

  Each frame: a line with the atom count; a comment line of key=value pairs (quoted values allowed) holding
  the energy under `energy_key` and optionally `Properties=species:S:1:pos:R:3[:forces:R:3...]` (default
  species:S:1:pos:R:3); then one line per atom. A small hand-written parser (only energies, positions and
  forces are needed; it avoids a dependency on ASE).

  Args:
    path: local file path.
    energy_key: comment-line key of the energy.
    forces_key: Properties column name of the forces.
  Returns:
    ExtXYZData.
  Raises:
    FileNotFoundError if `path` does not exist; ValueError with file and line on malformed input.
  """
  path = os.fspath(path)
  if not os.path.isfile(path):
    raise FileNotFoundError(f"extended-XYZ file not found: {path!r}.")
  with open(path, "r", encoding="utf-8") as f:
    lines = f.read().splitlines()
  species, positions, energies, forces = [], [], [], []
  has_forces = None
  i = 0
  while i < len(lines):
    if not lines[i].strip():
      i += 1
      continue
    try:
      n_atoms = int(lines[i].split()[0])
    except ValueError:
      raise ValueError(f"{path}:{i + 1}: expected the atom count, got {lines[i]!r}.") from None
    # A frame occupies the count line, the comment line and n_atoms atom lines.
    if n_atoms < 1 or i + 2 + n_atoms > len(lines):
      raise ValueError(f"{path}:{i + 1}: frame of {n_atoms} atoms is truncated or empty.")
    info = _parse_comment(lines[i + 1], i + 2, path)
    if energy_key not in info:
      raise ValueError(
        f"{path}:{i + 2}: frame {len(energies)} has no '{energy_key}=' entry in its comment line."
      )
    try:
      energies.append(float(info[energy_key]))
    except ValueError:
      raise ValueError(
        f"{path}:{i + 2}: {energy_key}={info[energy_key]!r} is not a number."
      ) from None
    cols, width = _parse_properties(info.get("Properties", "species:S:1:pos:R:3"), i + 2, path)
    for need in ("species", "pos"):
      if need not in cols:
        raise ValueError(f"{path}:{i + 2}: Properties lacks the '{need}' column.")
    frame_has_forces = forces_key in cols
    if has_forces is None:
      has_forces = frame_has_forces
    elif has_forces != frame_has_forces:
      raise ValueError(f"{path}:{i + 2}: some frames have '{forces_key}' and others do not.")
    sp, pos, frc = [], [], []
    for a in range(n_atoms):
      ln = i + 2 + a
      fields = lines[ln].split()
      if len(fields) < width:
        raise ValueError(f"{path}:{ln + 1}: expected {width} columns, got {len(fields)}.")
      s0, _ = cols["species"]
      p0, pc = cols["pos"]
      sp.append(fields[s0])
      try:
        pos.append([float(v) for v in fields[p0 : p0 + pc]])
        if frame_has_forces:
          f0, fc = cols[forces_key]
          frc.append([float(v) for v in fields[f0 : f0 + fc]])
      except ValueError:
        raise ValueError(f"{path}:{ln + 1}: non-numeric position or force.") from None
    species.append(tuple(sp))
    positions.append(np.asarray(pos, np.float64))
    if frame_has_forces:
      forces.append(np.asarray(frc, np.float64))
    i += 2 + n_atoms
  if not energies:
    raise ValueError(f"{path}: no frames found.")
  return ExtXYZData(
    tuple(species),
    tuple(positions),
    np.asarray(energies, np.float64),
    tuple(forces) if has_forces else None,
  )


def load_methane(path, energy_key: str = "energy", forces_key: str = "forces"):
  """Loads CH₄ configurations from a local extended-XYZ file in the surrogate's input representation.

  Args:
    path: local extended-XYZ file of CH₄ frames (one C and four H each, any atom order).
    energy_key, forces_key: as in `load_extxyz`.
  Returns:
    dict with x (N, 12) float64: the H coordinates relative to C in file order (raw Cartesian components),
    energy (N,) float64, and forces (N, 5, 3) float64 (C first, then the H atoms in file order) when the
    file has them.
  Raises:
    FileNotFoundError naming the Materials Cloud Archive record when `path` is missing; ValueError when a
    frame is not CH₄.
  """
  if not os.path.isfile(os.fspath(path)):
    raise FileNotFoundError(
      f"methane dataset not found at {os.fspath(path)!r}. It is {METHANE_RECORD}. "
      "For an offline stand-in use `methane_like_batch`."
    )
  data = load_extxyz(path, energy_key=energy_key, forces_key=forces_key)
  xs, fs = [], []
  for k, (sp, pos) in enumerate(zip(data.species, data.positions)):
    c_idx = [a for a, s in enumerate(sp) if s == "C"]
    h_idx = [a for a, s in enumerate(sp) if s == "H"]
    if len(sp) != 5 or len(c_idx) != 1 or len(h_idx) != 4:
      raise ValueError(f"frame {k} of {os.fspath(path)!r} is not CH4 (species {sp}).")
    xs.append((pos[h_idx] - pos[c_idx[0]]).reshape(12))
    if data.forces is not None:
      fs.append(data.forces[k][c_idx + h_idx])
  out = dict(x=np.stack(xs), energy=data.energies)
  if data.forces is not None:
    out["forces"] = np.stack(fs)
  return out


# -- Random-teacher function approximation (32-D) --------------------------------------------------


class TeacherTask(NamedTuple):
  """A fixed random MLP teacher R^d → R (sin or tanh hidden activations), standardised.

  Attributes:
    weights: tuple of (W (n_in, n_out), b (n_out,)) float32 numpy pairs; the activation after every
      hidden layer.
    mean, std: standardisation constants of the raw output under x ~ N(0, I_d).
    activation: "sin" | "tanh".
  """

  weights: tuple
  mean: float
  std: float
  activation: str = "sin"

  @property
  def input_dim(self) -> int:
    return self.weights[0][0].shape[0]


TEACHER_ACTIVATIONS = ("sin", "tanh")


def _teacher_raw(weights, x, xp, activation="sin"):
  act = {"sin": xp.sin, "tanh": xp.tanh}[activation]
  h = x
  for k, (w, b) in enumerate(weights):
    h = h @ w + b
    if k < len(weights) - 1:
      h = act(h)
  return h[..., 0]


def make_teacher(
  seed: int = 0,
  input_dim: int = 32,
  hidden: Sequence[int] = (64, 64),
  omega: float = 1.75,
  stats_samples: int = 1 << 16,
  activation: str = "sin",
) -> TeacherTask:
  """Builds the fixed-seed random teacher: sin(ω·W x/√fan_in + b) hidden layers, linear output.

  W entries are N(0, 1), scaled by ω/√fan_in (ω controls the frequency content, hence the difficulty),
  b ~ U(−π, π). The output is standardised with the mean and std of a fixed sample of N(0, I) inputs.

  The default ω = 1.75 puts ReLU MLP baselines' test MSE inside the band of the paper's Fig. 1.

  Args:
    seed: teacher seed. input_dim: d (32 in the paper's shapes). hidden: hidden widths. omega: ω > 0.
    stats_samples: size of the standardisation sample.
    activation: "sin" (default, the Fig. 1 stand-in) or "tanh" (a smoother teacher: the penalty
      ablation's task).
  Returns:
    TeacherTask.
  """
  if activation not in TEACHER_ACTIVATIONS:
    raise ValueError(f"activation must be one of {TEACHER_ACTIVATIONS}, got {activation!r}.")
  input_dim = _check_n(input_dim, "input_dim")
  hidden = tuple(_check_n(h, "hidden[i]") for h in hidden)
  if not float(omega) > 0:
    raise ValueError(f"omega must be > 0, got {omega!r}.")
  rng = np.random.default_rng(seed)
  dims = (input_dim,) + hidden + (1,)
  weights = []
  for k, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
    scale = (omega if k < len(dims) - 2 else 1.0) / np.sqrt(a)
    w = (rng.standard_normal((a, b)) * scale).astype(np.float32)
    bias = (rng.uniform(-np.pi, np.pi, b) if k < len(dims) - 2 else np.zeros(b)).astype(np.float32)
    weights.append((w, bias))
  x = np.random.default_rng(seed + 1).standard_normal((_check_n(stats_samples), input_dim))
  y = _teacher_raw(
    [(w.astype(np.float64), b.astype(np.float64)) for w, b in weights], x, np, activation
  )
  return TeacherTask(tuple(weights), float(y.mean()), float(y.std()), activation)


def teacher_apply(task: TeacherTask, x):
  """Standardised teacher output.

  Args:
    task: TeacherTask. x: (N, d).
  Returns:
    (N, 1) float32.
  """
  chex.assert_shape(
    x,
    (None, task.input_dim),
    exception_type=ValueError,
    custom_message=(f"x must have shape (N, {task.input_dim}), got {tuple(x.shape)}."),
  )
  ws = [(jnp.asarray(w), jnp.asarray(b)) for w, b in task.weights]
  return ((_teacher_raw(ws, x, jnp, task.activation) - task.mean) / task.std)[:, None]


def teacher_batch(task: TeacherTask, key, n: int):
  """A fresh batch x ~ N(0, I_d), y = teacher(x) (jittable).

  Returns:
    x (n, d) float32, y (n, 1) float32.
  """
  return _teacher_batch(
    task.weights, task.mean, task.std, _as_key(key), _check_n(n), task.activation
  )


@functools.partial(jax.jit, static_argnums=(4, 5))
def _teacher_batch(weights, mean, std, key, n, activation="sin"):
  x = jax.random.normal(key, (n, weights[0][0].shape[0]))
  return x, ((_teacher_raw(weights, x, jnp, activation) - mean) / std)[:, None]


def teacher_test_set(task: TeacherTask, seed: int = TEST_SEED, n: int = TEST_SAMPLES):
  """The fixed teacher test set as numpy arrays: x (n, d), y (n, 1)."""
  x, y = teacher_batch(task, jax.random.key(int(seed)), n)
  return np.asarray(x), np.asarray(y)


# -- Images ----------------------------------------------------------------------------------------


def load_digits(test_fraction: float = 0.25, seed: int = 0):
  """scikit-learn's bundled 8×8 digits (1797 images, 10 classes), shuffled and split deterministically.

  Args:
    test_fraction: in (0, 1).
    seed: split seed.
  Returns:
    x_train (N, 8, 8, 1) float32 in [0, 1], y_train (N,) int32, x_test, y_test.
  Raises:
    ImportError naming `scikit-learn` when it is not installed.
  """
  if not 0.0 < float(test_fraction) < 1.0:
    raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction!r}.")
  try:
    from sklearn.datasets import load_digits as _sk_load_digits  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise ImportError(
      "load_digits needs the `scikit-learn` package (it ships the digits data set); "
      "install it with `pip install scikit-learn`."
    ) from e
  d = _sk_load_digits()
  x = (d.images.astype(np.float32) / 16.0)[..., None]
  y = d.target.astype(np.int32)
  perm = np.random.default_rng(seed).permutation(len(y))
  n_test = int(round(test_fraction * len(y)))
  te, tr = perm[:n_test], perm[n_test:]
  return x[tr], y[tr], x[te], y[te]


CIFAR10_HELP = (
  "CIFAR-10 is not downloaded at run time: get 'cifar-10-python.tar.gz' (the python version) "
  "from https://www.cs.toronto.edu/~kriz/cifar.html on a machine with internet access, extract "
  "it, and pass the 'cifar-10-batches-py' directory (or its parent)."
)


def _get(d, key):
  if key in d:
    return d[key]
  bkey = key.encode()
  if bkey in d:
    return d[bkey]
  raise KeyError(key)


# The globals a CIFAR-10 python batch may name: numpy's array reconstruction (numpy 1.x and 2.x
# module paths) and dtypes. Dicts, lists, bytes and strings are pickle opcodes of their own.
_CIFAR_GLOBALS = {
  ("numpy.core.multiarray", "_reconstruct"),
  ("numpy._core.multiarray", "_reconstruct"),
  ("numpy", "ndarray"),
  ("numpy", "dtype"),
  ("numpy.core.multiarray", "scalar"),
  ("numpy._core.multiarray", "scalar"),
}


class _CifarUnpickler(pickle.Unpickler):
  """Loads numpy arrays, dicts, lists, bytes and strings; any other global (the way a crafted
  pickle reaches ``os.system`` or ``eval``) is refused before anything of it runs."""

  def find_class(self, module, name):
    if (module, name) in _CIFAR_GLOBALS:
      return super().find_class(module, name)
    raise pickle.UnpicklingError(f"refused global {module}.{name} (not part of a CIFAR-10 batch)")


def load_cifar10_batch(file):
  """Reads one CIFAR-10 python-pickle batch (`data_batch_k` or `test_batch`).

  The pickle is read by a restricted unpickler that admits only numpy arrays, dicts, lists, bytes
  and strings: a file that names any other Python object (as a crafted pickle does to run code)
  is refused with a ``DataError`` and nothing of it runs.

  Args:
    file: local path.
  Returns:
    x (N, 32, 32, 3) uint8 (NHWC), y (N,) int32 in 0..9.
  """
  file = os.fspath(file)
  if not os.path.isfile(file):
    raise FileNotFoundError(f"CIFAR-10 batch not found: {file!r}. {CIFAR10_HELP}")
  try:
    with open(file, "rb") as f:
      d = _CifarUnpickler(f, encoding="bytes").load()
  except pickle.UnpicklingError as e:
    raise DataError(f"{file!r} is not a CIFAR-10 python batch: {e}") from e
  except Exception as e:  # noqa: BLE001 — garbage or truncated: one line naming the file
    raise DataError(f"{file!r} is not a readable CIFAR-10 python batch ({type(e).__name__})") from e
  try:
    data = np.asarray(_get(d, "data"), np.uint8)
    labels = np.asarray(_get(d, "labels"), np.int64)
  except (KeyError, TypeError):
    raise ValueError(
      f"{file!r} is not a CIFAR-10 python batch (needs 'data' and 'labels')."
    ) from None
  if data.ndim != 2 or data.shape[1] != 3072 or labels.shape != (data.shape[0],):
    raise ValueError(
      f"{file!r}: data must be (N, 3072) with N labels, got data {data.shape} and labels "
      f"{labels.shape}."
    )
  if labels.size and (labels.min() < 0 or labels.max() > 9):
    raise ValueError(f"{file!r}: labels must lie in 0..9.")
  x = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
  return x, labels.astype(np.int32)


def load_cifar10(path, as_float: bool = True):
  """Loads CIFAR-10 from the standard python-pickle batches in a local directory.

  Args:
    path: the 'cifar-10-batches-py' directory (data_batch_1..5, test_batch) or its parent.
    as_float: return float32 images in [0, 1] (else uint8).
  Returns:
    x_train (50000, 32, 32, 3), y_train (50000,) int32, x_test (10000, 32, 32, 3), y_test (10000,) int32
    (sizes as found in the files).
  Raises:
    FileNotFoundError with download instructions when a batch file is missing.
  """
  path = os.fspath(path)
  if os.path.isdir(os.path.join(path, "cifar-10-batches-py")):
    path = os.path.join(path, "cifar-10-batches-py")
  names = [f"data_batch_{k}" for k in range(1, 6)] + ["test_batch"]
  missing = [n for n in names if not os.path.isfile(os.path.join(path, n))]
  if missing:
    raise FileNotFoundError(f"CIFAR-10 batches missing in {path!r}: {missing}. {CIFAR10_HELP}")
  parts = [load_cifar10_batch(os.path.join(path, n)) for n in names]
  x_tr = np.concatenate([p[0] for p in parts[:5]])
  y_tr = np.concatenate([p[1] for p in parts[:5]])
  x_te, y_te = parts[5]
  if as_float:
    x_tr = x_tr.astype(np.float32) / 255.0
    x_te = x_te.astype(np.float32) / 255.0
  return x_tr, y_tr, x_te, y_te
