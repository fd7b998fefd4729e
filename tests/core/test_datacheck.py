"""The checks of ``core.datacheck``: ``require_finite`` names the first bad row and column, counted
in the file; dtype, shape, emptiness, keys and unreadable files are each one line naming the
file."""

import numpy as np
import pytest

from iclr26_jax.core.datacheck import require_finite


def test_finite_and_integer_arrays_pass():
  require_finite(np.ones((3, 2)), "a.npy")
  require_finite(np.arange(5), "ints.npy")


@pytest.mark.parametrize("bad,row,col", [(np.nan, 4, 1), (np.inf, 0, 2), (-np.inf, 6, 0)])
def test_names_source_first_row_and_column(bad, row, col):
  x = np.zeros((7, 3))
  x[row, col] = bad
  x[6, 2] = np.nan  # a later bad row
  with pytest.raises(ValueError) as info:
    require_finite(x, "data/power/train.npy", row_offset=10)
  msg = str(info.value)
  assert msg.startswith("data/power/train.npy: non-finite value")
  assert f"data row {row + 10}, column {col}" in msg
  assert f"{1 if row == 6 else 2} bad row(s)" in msg


# -- dtype, shape, emptiness, keys and garbage files, each one line naming the file ---------------

from iclr26_jax.core.datacheck import (  # noqa: E402
  DataError,
  load_npy,
  open_npz,
  require_array,
  require_same_rows,
)


def test_integer_values_are_refused_not_cast():
  with pytest.raises(
    DataError, match=r"^f.npz\['obs'\]: expected floating values; got dtype int32"
  ):
    require_array(np.arange(6, dtype=np.int32).reshape(3, 2), "f.npz['obs']")
  require_array(np.zeros((3, 2), np.float32), "f.npz['obs']", shape=(None, 2))
  require_array(np.zeros(3, np.int64), "t", kind="integer")
  with pytest.raises(DataError, match="expected integer values; got dtype float32"):
    require_array(np.zeros(3, np.float32), "t", kind="integer")


def test_width_ndim_and_emptiness_name_what_was_expected():
  x = np.zeros((4, 54), np.float32)
  with pytest.raises(DataError) as e:
    require_array(x, "d.npz['obs']", shape=(None, 55), names={1: "the observation size"})
  assert str(e.value) == (
    "d.npz['obs']: expected 55 along axis 1 (the observation size); got shape (4, 54)"
  )
  with pytest.raises(DataError, match=r"expected 2-d array of shape \(n, 55\); got shape \(4,\)"):
    require_array(np.zeros(4, np.float32), "d", shape=(None, 55))
  with pytest.raises(DataError, match=r"at least 1 row\(s\); got shape \(0, 55\) \(empty\)"):
    require_array(np.zeros((0, 55), np.float32), "d", shape=(None, 55))
  with pytest.raises(DataError, match=r"same number of rows; got \{'a': 3, 'b': 2\}"):
    require_same_rows({"a": np.zeros(3), "b": np.zeros(2)}, "d")


def test_garbage_truncated_and_incomplete_files_are_one_line(tmp_path):
  good = tmp_path / "good.npz"
  np.savez_compressed(good, a=np.ones((50, 3)), b=np.zeros(50))
  assert sorted(open_npz(str(good), required=("a",))) == ["a", "b"]
  with pytest.raises(DataError, match=r"missing required array\(s\) \['c'\]; the file has \['a'"):
    open_npz(str(good), required=("a", "c"))
  cut = tmp_path / "cut.npz"
  cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
  garbage = tmp_path / "garbage.npz"
  garbage.write_bytes(b"\x80\x04garbage" * 40)
  text = tmp_path / "text.npz"
  text.write_text("observations,actions\n1,2\n")
  for f in (cut, garbage, text):
    with pytest.raises(DataError) as e:
      open_npz(str(f))
    msg = str(e.value)
    assert msg.startswith(f"{f}: cannot be read as a .npz archive") and "\n" not in msg, msg
  npy = tmp_path / "x.npy"
  np.save(npy, np.ones((4, 2)))
  assert load_npy(str(npy)).shape == (4, 2)
  npy.write_bytes(npy.read_bytes()[:40])
  with pytest.raises(DataError, match=f"^{npy}: cannot be read as a .npy array"):
    load_npy(str(npy))
  with pytest.raises(FileNotFoundError):
    open_npz(str(tmp_path / "none.npz"))
