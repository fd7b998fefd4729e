"""Offline data: the methane-like surrogate, extended-XYZ / methane loader, random teacher, digits, CIFAR-10.

Loaders are tested on tiny files written here (pytest tmp_path); generators against hand-computed values.
"""

import importlib.util
import math
import os
import pickle
import sys

import jax
import numpy as np
import pytest

from iclr26_jax.lmkan import data


def _energy_by_hand(h):
  """Surrogate energy of one geometry (4, 3), written out with the math module."""
  r = [math.sqrt(sum(c * c for c in p)) for p in h]
  e = sum((1 - math.exp(-1.8 * (ri - 1.09))) ** 2 for ri in r)
  for i in range(4):
    for j in range(i + 1, 4):
      rij = math.sqrt(sum((a - b) ** 2 for a, b in zip(h[i], h[j])))
      cos = sum(a * b for a, b in zip(h[i], h[j])) / (r[i] * r[j])
      e += 3 * math.exp(-2 * rij) + 0.5 * (cos + 1 / 3) ** 2
  return e


def test_methane_energy_oracles():
  # Tetrahedral CH4 at r0: Morse and angular terms vanish, 6 H–H pairs at r0·√(8/3).
  r0 = 1.09
  tet = np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]], float) / math.sqrt(3) * r0
  want = 6 * 3 * math.exp(-2 * r0 * math.sqrt(8 / 3))
  assert float(data.methane_energy(tet[None], xp=np)[0]) == pytest.approx(want, rel=1e-12)
  rng = np.random.default_rng(0)
  h = rng.standard_normal((3, 4, 3)) * 1.5
  got = data.methane_energy(h, xp=np)
  for k in range(3):
    assert got[k] == pytest.approx(_energy_by_hand(h[k].tolist()), rel=1e-12)


def test_methane_like_surrogate_is_deterministic_and_standardised():
  # "rbg" keys: threefry's XLA:CPU compile costs seconds; the generator code is the same for any key.
  key = lambda i: jax.random.key(i, impl="rbg")
  x, y = map(np.asarray, data.methane_like_batch(key(0), 8192))
  x2, y2 = map(np.asarray, data.methane_like_batch(key(0), 8192))
  x3, _ = map(np.asarray, data.methane_like_batch(key(1), 8192))
  assert x.shape == (8192, 12) and y.shape == (8192, 1)
  np.testing.assert_array_equal(x, x2)
  np.testing.assert_array_equal(y, y2)
  assert not np.allclose(x, x3)
  radii = np.linalg.norm(x.reshape(-1, 4, 3), axis=-1)
  assert radii.min() >= 0.5 - 1e-5 and radii.max() <= 3.0 + 1e-5
  # Targets are the energy of the inputs, standardised with the shared statistics (float32 rounding).
  mean, std = data.methane_like_stats()
  e = data.methane_energy(x.reshape(-1, 4, 3).astype(np.float64), xp=np)
  np.testing.assert_allclose(y[:, 0], (e - mean) / std, rtol=1e-4, atol=1e-4)
  # Statistics from an independent 2^18 sample: over 8192 test points the mean is within ~4 standard
  # errors (σ/√8192 ≈ 0.011) of 0 and the std within a few percent of 1.
  assert abs(float(y.mean())) < 0.05 and abs(float(y.std()) - 1) < 0.05


_XYZ = """5
Properties=species:S:1:pos:R:3:forces:R:3 energy=-40.5 pbc="F F F" comment="frame one"
H 1.1 0.0 0.0 0.1 0.2 0.3
C 0.1 0.2 0.3 1.0 2.0 3.0
H 0.0 1.2 0.0 0.4 0.5 0.6
H 0.0 0.0 1.3 0.7 0.8 0.9
H -1.0 -1.0 -1.0 1.1 1.2 1.3

5
energy=-40.25 Properties=species:S:1:pos:R:3:forces:R:3
C 0.0 0.0 0.0 0.0 0.0 0.0
H 1.0 0.0 0.0 1.0 0.0 0.0
H 0.0 1.0 0.0 0.0 1.0 0.0
H 0.0 0.0 1.0 0.0 0.0 1.0
H 0.5 0.5 0.5 0.5 0.5 0.5
"""


def test_load_methane_from_extxyz(tmp_path):
  path = tmp_path / "ch4.xyz"
  path.write_text(_XYZ)
  out = data.load_methane(path)
  np.testing.assert_allclose(out["energy"], [-40.5, -40.25])
  assert out["x"].shape == (2, 12) and out["forces"].shape == (2, 5, 3)
  # H coordinates relative to C, file order.
  np.testing.assert_allclose(out["x"][0, :3], [1.0, -0.2, -0.3])
  np.testing.assert_allclose(out["x"][0, 9:], [-1.1, -1.2, -1.3])
  np.testing.assert_allclose(out["x"][1], [1, 0, 0, 0, 1, 0, 0, 0, 1, 0.5, 0.5, 0.5])
  # Forces: C first, then the H atoms in file order.
  np.testing.assert_allclose(out["forces"][0, 0], [1.0, 2.0, 3.0])
  np.testing.assert_allclose(out["forces"][0, 1], [0.1, 0.2, 0.3])
  plain = data.load_extxyz(path)
  assert plain.species[0] == ("H", "C", "H", "H", "H") and len(plain.positions) == 2


def test_extxyz_without_forces_and_errors(tmp_path):
  p = tmp_path / "noforces.xyz"
  p.write_text("2\nenergy=1.5\nC 0 0 0\nH 1 0 0\n")
  d = data.load_extxyz(p)
  assert d.forces is None and d.energies.tolist() == [1.5]
  with pytest.raises(ValueError, match="not CH4"):
    data.load_methane(p)
  bad = tmp_path / "noenergy.xyz"
  bad.write_text("1\nfoo=1\nC 0 0 0\n")
  with pytest.raises(ValueError, match="no 'energy='"):
    data.load_extxyz(bad)
  trunc = tmp_path / "trunc.xyz"
  trunc.write_text("5\nenergy=1\nC 0 0 0\n")
  with pytest.raises(ValueError, match="truncated"):
    data.load_extxyz(trunc)
  with pytest.raises(FileNotFoundError, match=r"2020\.105"):
    data.load_methane(tmp_path / "missing.xyz")


def test_random_teacher_task():
  t = data.make_teacher(seed=0)
  t2 = data.make_teacher(seed=0)
  assert t.input_dim == 32
  for (w, b), (w2, b2) in zip(t.weights, t2.weights):
    np.testing.assert_array_equal(w, w2)
    np.testing.assert_array_equal(b, b2)
  key = lambda i: jax.random.key(i, impl="rbg")  # see the methane test
  x, y = map(np.asarray, data.teacher_batch(t, key(0), 8192))
  _, y_other = map(np.asarray, data.teacher_batch(t, key(5), 8192))
  assert x.shape == (8192, 32) and y.shape == (8192, 1)
  assert not np.allclose(y, y_other)
  # Standardised with an independent 2^16 sample (SE ≈ 0.011 over 8192 points).
  assert abs(float(y.mean())) < 0.05 and abs(float(y.std()) - 1) < 0.05
  # Inputs are N(0, I).
  assert abs(float(x.std()) - 1) < 0.02


@pytest.mark.skipif(
  importlib.util.find_spec("sklearn") is None, reason="scikit-learn not installed"
)
def test_load_digits():
  xtr, ytr, xte, yte = data.load_digits(test_fraction=0.25, seed=0)
  assert xtr.shape[1:] == (8, 8, 1) and xtr.dtype == np.float32
  assert len(ytr) + len(yte) == 1797 and len(yte) == round(0.25 * 1797)
  assert xtr.min() >= 0 and xtr.max() <= 1 and set(np.unique(ytr)) == set(range(10))
  xtr2, _, _, _ = data.load_digits(test_fraction=0.25, seed=0)
  np.testing.assert_array_equal(xtr, xtr2)


def test_load_digits_without_sklearn_names_the_package(monkeypatch):
  monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
  with pytest.raises(ImportError, match="scikit-learn"):
    data.load_digits()


def _write_cifar(directory, n_per_batch=2, n_test=3):
  directory.mkdir(parents=True)
  rng = np.random.default_rng(0)
  arrays = {}
  for name in [f"data_batch_{k}" for k in range(1, 6)] + ["test_batch"]:
    n = n_test if name == "test_batch" else n_per_batch
    d = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
    labels = rng.integers(0, 10, n).tolist()
    arrays[name] = (d, labels)
    with open(directory / name, "wb") as f:  # the real files use bytes keys (pickled by Python 2)
      pickle.dump(
        {
          b"batch_label": name.encode(),
          b"labels": labels,
          b"data": d,
          b"filenames": [b"x.png"] * n,
        },
        f,
      )
  return arrays


def test_load_cifar10_fake_batches(tmp_path):
  arrays = _write_cifar(tmp_path / "cifar-10-batches-py")
  xtr, ytr, xte, yte = data.load_cifar10(tmp_path, as_float=False)  # the parent directory works too
  assert xtr.shape == (10, 32, 32, 3) and xte.shape == (3, 32, 32, 3) and xtr.dtype == np.uint8
  d, labels = arrays["data_batch_2"]
  # Row layout: 1024 red, then green, then blue values, each row-major 32×32.
  n, h, w, c = 1, 5, 7, 2
  assert xtr[2 + n, h, w, c] == d[n, c * 1024 + h * 32 + w]
  assert ytr[2:4].tolist() == labels
  assert yte.tolist() == arrays["test_batch"][1]
  xf, _, _, _ = data.load_cifar10(tmp_path / "cifar-10-batches-py")
  assert xf.dtype == np.float32 and float(xf.max()) <= 1.0
  np.testing.assert_allclose(xf, xtr / 255.0, rtol=1e-6)


def test_load_cifar10_errors(tmp_path):
  with pytest.raises(FileNotFoundError, match="cifar-10-python"):
    data.load_cifar10(tmp_path / "nowhere")
  bad = tmp_path / "bad"
  _write_cifar(bad)
  with open(bad / "test_batch", "wb") as f:
    pickle.dump({b"data": np.zeros((2, 100), np.uint8), b"labels": [0, 1]}, f)
  with pytest.raises(ValueError, match=r"\(N, 3072\)"):
    data.load_cifar10(bad)


class _RunsCode:
  """What a crafted pickle does: its __reduce__ names a callable that the loader would call."""

  def __init__(self, marker):
    self.marker = marker

  def __reduce__(self):
    return (os.mkdir, (self.marker,))


def test_crafted_cifar_pickle_is_refused_without_running(tmp_path):
  marker = str(tmp_path / "ran")
  path = tmp_path / "data_batch_1"
  with open(path, "wb") as f:
    pickle.dump({b"data": _RunsCode(marker), b"labels": [0]}, f)
  with pytest.raises(data.DataError, match="refused global"):
    data.load_cifar10_batch(path)
  assert not os.path.exists(marker)  # nothing of it ran
  # The unrestricted loader would have run it: the test can fail.
  with open(path, "rb") as f:
    pickle.load(f)
  assert os.path.exists(marker)
