"""require_finite: the first bad row and column, counted in the file."""

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
