"""Argument checks shared by the method packages: one message format for every entry point.

Examples:
  >>> positive_int(3, "steps")
  3
  >>> positive_int(0, "steps")
  Traceback (most recent call last):
  ...
  ValueError: steps must be >= 1, got 0
  >>> positive_int(2.0, "num_states", minimum=2)
  Traceback (most recent call last):
  ...
  ValueError: num_states must be an int >= 2, got 2.0
  >>> in_range(0.5, "decay", 0.0, 1.0, high_open=True)
  0.5
  >>> in_range(1.0, "decay", 0.0, 1.0, high_open=True)
  Traceback (most recent call last):
  ...
  ValueError: decay must lie in [0.0, 1.0), got 1.0
"""

from __future__ import annotations

import math
import numbers
from typing import Any


def positive_int(value: Any, name: str, minimum: int = 1) -> int:
  """``value`` as a Python int, checked to be an integer (not a bool) of at least ``minimum``.

  Raises:
    ValueError: naming ``name``, the bound and the value given.
  """
  if isinstance(value, bool) or not isinstance(value, numbers.Integral):
    raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
  if value < minimum:
    raise ValueError(f"{name} must be >= {minimum}, got {value}")
  return int(value)


def in_range(
  value: Any,
  name: str,
  low: float,
  high: float = math.inf,
  low_open: bool = False,
  high_open: bool = False,
) -> float:
  """``value`` as a float, checked to be a real number (not a bool) in the interval given.

  ``low_open`` / ``high_open`` exclude the bound; ``high = inf`` (closed) admits ``inf`` itself.

  Raises:
    ValueError: naming ``name``, the interval and the value given.
  """
  if isinstance(value, bool) or not isinstance(value, numbers.Real):
    raise ValueError(f"{name} must be a float, got {value!r}")
  v = float(value)
  ok = math.isfinite(v) or (high == math.inf and v == math.inf and not high_open)
  ok = ok and (v > low if low_open else v >= low) and (v < high if high_open else v <= high)
  if not ok:
    raise ValueError(
      f"{name} must lie in {'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}, "
      f"got {value!r}"
    )
  return v
