"""Checks data loaders run on what they read, so a bad file fails at load time, naming itself.

Without them a NaN in a dataset surfaces as ``NonFiniteError`` at the first step, pointing at the
model, and a wrong dtype or shape as a traceback or a silent cast. Every check raises
``DataError`` (a ``ValueError``) in one line naming the file, the array and what was expected:
``open_npz`` / ``load_npy`` (a garbage or truncated file), ``require_array`` (kind, number of
dimensions, sizes per axis, emptiness), ``require_same_rows`` and ``require_finite``.
"""

from __future__ import annotations

import zipfile
import zlib
from typing import Mapping, Sequence

import numpy as np


class DataError(ValueError):
  """A data file is missing a key or holds an array of the wrong dtype, shape or values."""


_KINDS = {
  "floating": (np.floating,),
  "integer": (np.integer, np.bool_),
  "numeric": (np.number, np.bool_),
}


def _first_line(e: BaseException) -> str:
  text = str(e).strip().splitlines()
  return f"{type(e).__name__}: {text[0][:200]}" if text else type(e).__name__


def open_npz(path: str, required: Sequence[str] = ()) -> dict[str, np.ndarray]:
  """Reads every array of the ``.npz`` file ``path`` (no pickles) into a dict.

  Args:
    path: the file.
    required: keys that must be present.
  Returns:
    ``{key: array}`` for every array in the file.
  Raises:
    DataError: the file cannot be read as a ``.npz`` archive (garbage, truncated, a pickle), an
      array inside cannot be decompressed, or a required key is missing (the message lists the
      keys the file has).
    FileNotFoundError: the file does not exist.
  """
  try:
    with np.load(path, allow_pickle=False) as z:
      if not isinstance(z, np.lib.npyio.NpzFile):
        raise DataError(f"{path}: expected a .npz archive of arrays; got a single .npy array")
      out = {}
      for key in z.files:
        try:
          out[key] = z[key]
        except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as e:
          raise DataError(f"{path}[{key!r}]: cannot be read ({_first_line(e)})") from e
  except (FileNotFoundError, DataError):
    raise
  except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error, KeyError) as e:
    raise DataError(
      f"{path}: cannot be read as a .npz archive of arrays ({_first_line(e)}); regenerate or "
      "replace the file"
    ) from e
  missing = [k for k in required if k not in out]
  if missing:
    raise DataError(f"{path}: missing required array(s) {missing}; the file has {sorted(out)}")
  return out


def load_npy(path: str) -> np.ndarray:
  """Reads one ``.npy`` array (no pickles).

  Raises:
    DataError: the file is not a readable ``.npy`` array (garbage, truncated, pickled).
    FileNotFoundError: it does not exist.
  """
  try:
    out = np.load(path, allow_pickle=False)
  except FileNotFoundError:
    raise
  except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
    raise DataError(
      f"{path}: cannot be read as a .npy array ({_first_line(e)}); regenerate or replace the file"
    ) from e
  if isinstance(out, np.lib.npyio.NpzFile):
    out.close()
    raise DataError(f"{path}: expected a .npy array; got a .npz archive")
  return out


def require_array(
  array,
  source: str,
  *,
  kind: str = "floating",
  shape: Sequence[int | None] | None = None,
  min_rows: int = 1,
  names: Mapping[int, str] | None = None,
) -> np.ndarray:
  """Checks one loaded array; returns it as a numpy array (unchanged: no cast).

  Args:
    array: what was read.
    source: the file and key (``"train.npz['observations']"``), named in the message.
    kind: ``"floating"`` (a float dtype; integers are refused, not cast: a cast would hide a
      file written wrong), ``"integer"`` (integers or bools) or ``"numeric"`` (any number).
    shape: the sizes it must have per axis, ``None`` for any size (``(None, 55)``: rows of 55
      columns); its length fixes the number of dimensions.
    min_rows: the least number of rows (axis 0) it must have (1: not empty).
    names: what an axis' size is checked against, for the message (``{1: "the environment's
      observation size"}``).
  Raises:
    DataError: one line naming ``source``, what was expected and what was found.
  """
  a = np.asarray(array)
  if kind not in _KINDS:
    raise ValueError(f"kind must be one of {sorted(_KINDS)}; got {kind!r}")
  if not issubclass(a.dtype.type, _KINDS[kind]):
    extra = " (a cast would truncate or change the values)" if kind != "numeric" else ""
    raise DataError(f"{source}: expected {kind} values; got dtype {a.dtype}{extra}")
  if shape is not None:
    if a.ndim != len(shape):
      want = "(" + ", ".join("n" if d is None else str(d) for d in shape) + ")"
      raise DataError(
        f"{source}: expected {len(shape)}-d array of shape {want}; got shape {a.shape}"
      )
    for axis, (want, got) in enumerate(zip(shape, a.shape)):
      if want is not None and want != got:
        what = (names or {}).get(axis, f"axis {axis}")
        raise DataError(
          f"{source}: expected {want} along axis {axis} ({what}); got shape {a.shape}"
        )
  if a.ndim == 0 or a.shape[0] < min_rows:
    raise DataError(
      f"{source}: expected at least {min_rows} row(s); got shape {a.shape}"
      + (" (empty)" if a.size == 0 else "")
    )
  return a


def require_same_rows(arrays: Mapping[str, np.ndarray], source: str) -> int:
  """All arrays have the same number of rows (axis 0); returns it.

  Raises:
    DataError: naming ``source`` and every key's row count.
  """
  rows = {k: int(np.shape(v)[0]) if np.ndim(v) else 0 for k, v in arrays.items()}
  if len(set(rows.values())) > 1:
    raise DataError(f"{source}: arrays must have the same number of rows; got {rows}")
  return next(iter(rows.values()), 0)


def require_finite(array: np.ndarray, source: str, row_offset: int = 0) -> None:
  """Raises ``ValueError`` naming ``source`` and the first row holding a NaN or inf.

  Args:
    array: loaded data, rows first (``(n, ...)``; a 0-d or 1-d array counts each entry as a row).
    source: what was read (a file name, optionally with the array or split inside it).
    row_offset: index of ``array``'s first row in ``source`` (when it is a slice of a file).
  Raises:
    DataError: ``array`` has a non-finite entry; the message gives the row (0-based, counting
      data rows of ``source``), the column and the number of bad rows (a ``ValueError``).
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
  raise DataError(
    f"{source}: non-finite value {value} at data row {first + row_offset}{where} "
    f"(0-based; {int(rows.sum())} bad row(s) in all); fix or drop those rows"
  )
