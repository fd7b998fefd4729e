"""Score samplers of your own on a discrete Schrödinger-bridge benchmark with a known solution."""

import sys

import jax
import jax.numpy as jnp

from iclr26_jax import dsb

tiny = "--tiny" in sys.argv
bench = dsb.Benchmark.from_preset("hd_d2_s50_prior_gaussian_a0.02")  # names: dsb.PRESETS
sizes = dict(num_test=512, num_points=4, cond_samples=256) if tiny else {}
s = bench.num_categories


def identity(key, x0):  # move nothing
  return x0


def jitter(key, x0):  # a local random walk: x0 plus a small step, clipped to the categories
  step = jax.random.randint(key, x0.shape, -3, 4)
  return jnp.clip(x0 + step, 0, s - 1)


def independent(key, x0):  # right marginal, no coupling: fresh samples of p_1
  return bench.sample_target(key, x0.shape[0])


samplers = dict(identity=identity, jitter=jitter, independent=independent)
samplers["analytic solution"] = bench.sample_solution
for name, fn in samplers.items():
  m = dsb.evaluate(bench, fn, key=jax.random.key(0), **sizes)
  print(f"{name:>18}: cond_shape {m['cond_shape']:.3f}  shape {m['shape']:.3f}")
