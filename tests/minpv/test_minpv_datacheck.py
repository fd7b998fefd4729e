"""The UCI loader checks its files at load time, each fault naming the file: a NaN or inf with the
first bad row and column as counted in the file (it used to accept them; training then stopped at
step 1 with a NonFiniteError about the loss), integer values where floats are expected, and a file
that is not an archive."""

import numpy as np
import pytest

from iclr26_jax.core import datacheck
from iclr26_jax.minpv import data


def test_uci_folder_with_nan_names_file_and_row(tmp_path):
  rng = np.random.default_rng(0)
  for split in ("train", "val", "test"):
    np.save(tmp_path / f"{split}.npy", rng.normal(size=(20, 3)))
  test = rng.normal(size=(20, 3))
  test[13, 2] = np.nan
  np.save(tmp_path / "test.npy", test)
  with pytest.raises(ValueError, match=r"test\.npy: non-finite value nan at data row 13, column 2"):
    data.load_uci(str(tmp_path))


def test_uci_csv_with_inf_counts_rows_in_the_file(tmp_path):
  arr = np.arange(60, dtype=np.float64).reshape(20, 3)
  arr[17, 0] = np.inf  # in the test part of the 80/10/10 split
  np.savetxt(tmp_path / "d.csv", arr, delimiter=",")
  with pytest.raises(ValueError, match=r"d\.csv: non-finite value inf at data row 17, column 0"):
    data.load_uci(str(tmp_path / "d.csv"))


def test_uci_npz_with_nan(tmp_path):
  train = np.ones((10, 2))
  train[3, 1] = np.nan
  np.savez(tmp_path / "g.npz", train=train, test=np.ones((4, 2)))
  with pytest.raises(ValueError, match=r"g\.npz\['train'\]: .* data row 3, column 1"):
    data.load_uci(str(tmp_path / "g.npz"))


def test_minpv_uci_integer_file_is_refused(tmp_path):
  from iclr26_jax.minpv import data as minpv_data

  f = tmp_path / "uci.npz"
  np.savez(f, train=np.arange(40, dtype=np.int32).reshape(20, 2), test=np.zeros((5, 2)))
  with pytest.raises(datacheck.DataError, match=r"uci.npz\['train'\]: expected floating values"):
    minpv_data.load_uci(str(f))
  f.write_bytes(b"garbage")
  with pytest.raises(datacheck.DataError, match="cannot be read as a .npz archive"):
    minpv_data.load_uci(str(f))
