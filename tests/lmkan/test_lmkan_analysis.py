import numpy as np
import pytest

from experiments.lmkan_analysis import flop_ratio_at_matched_error


def test_interpolates_in_log_flops():
  # Baseline error falls linearly in log10(FLOPs): 1.0 at 1e3, 0.5 at 1e5. Error 0.75 is
  # reached at 1e4 exactly; a model at 1e3 FLOPs with that error has ratio 10.
  r = flop_ratio_at_matched_error([1e3, 1e5], [1.0, 0.5], 1e3, 0.75)
  assert r.kind == "exact" and r.ratio == pytest.approx(10.0)


def test_bounds_and_running_minimum():
  r = flop_ratio_at_matched_error([1e3, 1e4], [1.0, 0.8], 500.0, 0.1)
  assert r.kind == "lower_bound" and r.ratio == pytest.approx(20.0)
  r = flop_ratio_at_matched_error([1e3, 1e4], [1.0, 0.8], 500.0, 2.0)
  assert r.kind == "upper_bound" and r.ratio == pytest.approx(2.0)
  # A bigger baseline that does worse (0.9 at 1e5) never counts: the running min is 0.8.
  r = flop_ratio_at_matched_error([1e5, 1e3, 1e4], [0.9, 1.0, 0.8], 1e3, 0.85)
  assert r.kind == "exact" and 1e3 < r.baseline_flops < 1e4


def test_bad_input():
  with pytest.raises(ValueError):
    flop_ratio_at_matched_error([], [], 1.0, 1.0)
  with pytest.raises(ValueError):
    flop_ratio_at_matched_error([1.0, 2.0], [1.0], 1.0, 1.0)


def test_flops_to_reach_and_equal_flop_error():
  from experiments.lmkan_analysis import flops_to_reach, interpolate_error_at_flops

  # Error linear in log10(FLOPs): 1.0 at 1e3, 0.5 at 1e5 → 0.75 at 1e4.
  r = flops_to_reach([1e5, 1e3], [0.5, 1.0], 0.75)
  assert r.kind == "exact" and r.flops == pytest.approx(1e4)
  assert flops_to_reach([1e3, 1e5], [1.0, 0.5], 0.4).kind == "not_reached"
  assert np.isnan(flops_to_reach([1e3, 1e5], [1.0, 0.5], 0.4).flops)
  assert flops_to_reach([1e3, 1e5], [1.0, 0.5], 1.2).flops == 1e3  # the smallest point suffices
  assert interpolate_error_at_flops([1e3, 1e5], [1.0, 0.5], 1e4) == pytest.approx(0.75)
  assert np.isnan(interpolate_error_at_flops([1e3, 1e5], [1.0, 0.5], 1e6))
