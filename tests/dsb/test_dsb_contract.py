"""The accuracy contract of ``dsb.evaluate`` at its defaults (4,096 test pairs, 16 conditioning
points, 1,000 conditional samples per point), as the method page states it under "Accuracy at the
defaults": what an exact sampler scores, i.e. how finely the evaluation can tell samplers apart.

Problem: the enumerable preset ``tiny_d2_s6_uniform`` (D = 2, S = 6), scored with its own exact
plan as the sampler (``bench.sample_solution``).

Oracle: ``cond_shape`` is 1 - the mean, over the conditioning points x_0 and the coordinates d, of
TV(h, h'), h and h' the histograms of n draws each (the truth's and the sampler's) of the
per-coordinate conditional pi*^d(. | x_0). For an exact sampler both are n draws of one law p, so
E TV = 0.5 sum_k E|X_k - Y_k| / n with X_k, Y_k i.i.d. Binomial(n, p_k): computed here exactly
(the law of X_k - Y_k by convolution) from p, which comes from enumerating the plan in float64.
The tolerance is three times an upper bound on the score's standard deviation (the standard
deviation of a sum is at most the sum of the terms' ones; the points are independent).

Measured: predicted 0.969 at n = 1,000 (scores 0.973 / 0.968 / 0.969 with keys 0 / 1 / 2; the
bound on the standard deviation is 0.006) and 0.985 at n = 4,000 (scores 0.985 / 0.984 / 0.985):
the deficit 1 - cond_shape falls as 1 / sqrt(n).
"""

import jax
import numpy as np
from scipy import signal, stats

from iclr26_jax import dsb
from iclr26_jax.dsb import metrics as M
from iclr26_jax.dsb import evaluation
from tests.helpers import assert_page_cites_existing_tests

TINY = "tiny_d2_s6_uniform"


def _abs_diff(p: float, n: int) -> tuple[float, float]:
  """Mean and variance of |X - Y| / n for X, Y i.i.d. Binomial(n, p), exactly."""
  pmf = stats.binom.pmf(np.arange(n + 1), n, p)
  law = np.clip(signal.fftconvolve(pmf, pmf[::-1]), 0.0, None)  # P(X - Y = k), k = -n..n
  law /= law.sum()
  a = np.abs(np.arange(-n, n + 1)) / n
  mean = law @ a
  return mean, law @ a**2 - mean**2


def _exact_sampler_cond_shape(bench, n: int, points: np.ndarray) -> tuple[float, float]:
  """E[cond_shape] of an exact sampler at these points, and a bound on its standard deviation."""
  s, d = bench.num_categories, bench.dim
  states, _, log_cond = M.exact_joint_log_probs(bench)
  cond = np.exp(np.asarray(log_cond, np.float64))
  cond /= cond.sum(-1, keepdims=True)
  row_of = {tuple(x): i for i, x in enumerate(np.asarray(states))}
  tv = np.zeros((len(points), d))
  tv_sd = np.zeros((len(points), d))
  for i, x in enumerate(points):
    joint = cond[row_of[tuple(x)]].reshape((s,) * d)
    for j in range(d):
      marginal = joint.sum(axis=tuple(k for k in range(d) if k != j))
      moments = [_abs_diff(pk, n) for pk in marginal]
      tv[i, j] = 0.5 * sum(m for m, _ in moments)
      tv_sd[i, j] = 0.5 * sum(np.sqrt(v) for _, v in moments)
  return 1.0 - tv.mean(), float(np.sqrt(np.sum(tv_sd.mean(1) ** 2)) / len(points))


def test_exact_sampler_scores_the_predicted_noise_floor_at_the_defaults():
  bench = dsb.Benchmark.from_preset(TINY)
  floors = {}
  for n in (1000, 4000):  # evaluate's default, then 4x the conditional samples
    kwargs = {} if n == 1000 else {"cond_samples": n}
    got = dsb.evaluate(bench, bench.sample_solution, key=jax.random.key(0), **kwargs)
    ctx = evaluation.prepare_preset(TINY, 0, cond_samples=n, eval_seed=0)  # evaluate's own points
    assert np.asarray(ctx.points).shape == (16, 2)
    want, sd = _exact_sampler_cond_shape(bench, n, np.asarray(ctx.points))
    assert abs(got["cond_shape"] - want) < 3 * sd, (n, got["cond_shape"], want, sd)
    floors[n] = want
  assert 0.96 < floors[1000] < 0.98 and 0.98 < floors[4000] < 0.99, floors
  # The deficit of an exact sampler shrinks as 1 / sqrt(n): halved by 4x the samples.
  np.testing.assert_allclose((1 - floors[4000]) / (1 - floors[1000]), 0.5, atol=0.02)


def test_the_method_page_cites_this_contract():
  cited = assert_page_cites_existing_tests("dsb")
  assert (
    "tests/dsb/test_dsb_contract.py",
    "test_exact_sampler_scores_the_predicted_noise_floor_at_the_defaults",
  ) in cited
