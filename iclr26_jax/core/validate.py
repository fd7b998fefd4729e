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
"""

from __future__ import annotations

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
