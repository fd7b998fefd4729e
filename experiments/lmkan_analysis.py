"""Accuracy–FLOPs analysis: the FLOP ratio at matched accuracy (the paper's Fig. 1 arrows).

Given a baseline curve (FLOPs, error) and a model point (f, e), the matched-accuracy FLOPs are
where the baseline's error reaches e, by linear interpolation in log-FLOPs on the baseline's
running minimum (a larger model that does worse never counts as reaching e). When e lies
beyond the baseline's range the ratio is only bounded and says so.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np


class MatchedRatio(NamedTuple):
  """``ratio`` = baseline FLOPs at the model's error / model FLOPs; ``kind`` is "exact"
  (interpolated), "lower_bound" (the model beats every baseline) or "upper_bound" (the model
  is worse than the smallest baseline)."""

  ratio: float
  baseline_flops: float
  kind: str


def flop_ratio_at_matched_error(
  base_flops: Sequence[float], base_err: Sequence[float], flops: float, err: float
) -> MatchedRatio:
  """Baseline FLOPs needed to reach ``err``, divided by ``flops``.

  Args:
    base_flops: (n,) baseline FLOPs per sample, n ≥ 1 (any order).
    base_err: (n,) baseline errors (lower is better).
    flops: the model's FLOPs per sample.
    err: the model's error.
  """
  f = np.asarray(base_flops, np.float64)
  e = np.asarray(base_err, np.float64)
  if f.ndim != 1 or f.shape != e.shape or f.size == 0:
    raise ValueError(f"base_flops and base_err must be equal-length 1-D; got {f.shape}, {e.shape}")
  if flops <= 0 or np.any(f <= 0):
    raise ValueError("FLOPs must be positive")
  order = np.argsort(f)
  f, e = f[order], np.minimum.accumulate(e[order])
  if err < e[-1]:
    return MatchedRatio(f[-1] / flops, f[-1], "lower_bound")
  if err >= e[0]:
    return MatchedRatio(f[0] / flops, f[0], "upper_bound" if err > e[0] else "exact")
  i = int(np.argmax(e <= err))  # first baseline at least as good as err (i ≥ 1)
  lf0, lf1 = np.log(f[i - 1]), np.log(f[i])
  w = (e[i - 1] - err) / (e[i - 1] - e[i]) if e[i - 1] != e[i] else 1.0
  matched = float(np.exp(lf0 + w * (lf1 - lf0)))
  return MatchedRatio(matched / flops, matched, "exact")


class FlopsToReach(NamedTuple):
  """FLOPs a family needs to reach a target error; ``kind`` is "exact" (interpolated), or
  "not_reached" (no point is that accurate: ``flops`` is NaN)."""

  flops: float
  kind: str


def flops_to_reach(flops: Sequence[float], err: Sequence[float], target: float) -> FlopsToReach:
  """FLOPs one family needs to reach ``target`` error: linear interpolation in log-FLOPs on the
  family's running minimum of error over increasing FLOPs (as `flop_ratio_at_matched_error`).

  Args:
    flops: (n,) FLOPs per sample, n ≥ 1, positive.
    err: (n,) errors (lower is better).
    target: the error to reach.
  """
  f = np.asarray(flops, np.float64)
  e = np.asarray(err, np.float64)
  if f.ndim != 1 or f.shape != e.shape or f.size == 0:
    raise ValueError(f"flops and err must be equal-length 1-D; got {f.shape}, {e.shape}")
  if np.any(f <= 0):
    raise ValueError("FLOPs must be positive")
  order = np.argsort(f)
  f, e = f[order], np.minimum.accumulate(e[order])
  if target < e[-1]:
    return FlopsToReach(float("nan"), "not_reached")
  if target >= e[0]:
    return FlopsToReach(float(f[0]), "exact")
  i = int(np.argmax(e <= target))
  lf0, lf1 = np.log(f[i - 1]), np.log(f[i])
  w = (e[i - 1] - target) / (e[i - 1] - e[i]) if e[i - 1] != e[i] else 1.0
  return FlopsToReach(float(np.exp(lf0 + w * (lf1 - lf0))), "exact")


def interpolate_error_at_flops(flops: Sequence[float], err: Sequence[float], at: float) -> float:
  """A family's error at ``at`` FLOPs: linear interpolation of the error in log-FLOPs between the
  family's points (NaN outside their FLOP range). Used for "a baseline of equal FLOPs"."""
  f = np.asarray(flops, np.float64)
  e = np.asarray(err, np.float64)
  order = np.argsort(f)
  f, e = f[order], e[order]
  if at < f[0] or at > f[-1]:
    return float("nan")
  return float(np.interp(np.log(at), np.log(f), e))
