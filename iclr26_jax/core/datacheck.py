"""Checks data loaders run on what they read, so a bad file fails at load time, naming itself.

A NaN or inf in a dataset otherwise surfaces as ``NonFiniteError`` at the first training step,
pointing at the model instead of the data.
"""

from __future__ import annotations

import numpy as np


def require_finite(array: np.ndarray, source: str, row_offset: int = 0) -> None:
  """Raises ``ValueError`` naming ``source`` and the first row holding a NaN or inf.

  Args:
    array: loaded data, rows first (``(n, ...)``; a 0-d or 1-d array counts each entry as a row).
    source: what was read (a file name, optionally with the array or split inside it).
    row_offset: index of ``array``'s first row in ``source`` (when it is a slice of a file).
  Raises:
    ValueError: ``array`` has a non-finite entry; the message gives the row (0-based, counting
      data rows of ``source``), the column and the number of bad rows.
  """
  a = np.asarray(array)
  if not np.issubdtype(a.dtype, np.inexact):
    return
  bad = ~np.isfinite(a)
  if not bad.any():
    return
  rows = bad.reshape(bad.shape[0], -1).any(axis=1) if a.ndim >= 1 else bad.reshape(1)
  first = int(np.argmax(rows))
  row_bad = bad[first] if a.ndim >= 1 else bad
  col = np.unravel_index(int(np.argmax(row_bad)), np.shape(row_bad)) if np.ndim(row_bad) else ()
  value = a[first][col] if a.ndim >= 1 else a[()]
  where = f", column {col[0] if len(col) == 1 else col}" if col else ""
  raise ValueError(
    f"{source}: non-finite value {value} at data row {first + row_offset}{where} "
    f"(0-based; {int(rows.sum())} bad row(s) in all); fix or drop those rows"
  )
