"""Shared timing helpers for the benchmarks (ratios are measured in the same run)."""

import statistics
import time

import jax


def median_time(fn, *args, warmup: int = 2, reps: int = 10) -> float:
  """Median wall time in seconds of ``fn(*args)`` (already jitted), after ``warmup`` calls."""
  for _ in range(warmup):
    jax.block_until_ready(fn(*args))
  times = []
  for _ in range(reps):
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    times.append(time.perf_counter() - t0)
  return statistics.median(times)
