r"""MinPV's KL estimate at given settings on pairs with a known KL (the accuracy table of the
MinPV docs page).

  python -m experiments.minpv_accuracy                      # the defaults, seeds 0 and 1
  python -m experiments.minpv_accuracy --cases=g4 --seeds=1 --options='{"steps": 6000}'

Cases (10,000 samples of each side, the KL on 10,000 fresh samples of p):

* ``g4`` / ``g8``: Gaussian pairs with full covariances in d = 4 / 8 (closed-form KL);
* ``ts``: Student-t (nu = 4) shifted by 0.8 per coordinate against the same t centred, d = 4: heavy
  tails on both sides, a bounded log ratio (KL by Monte Carlo on 2 million points of the exact
  densities);
* ``t3``: a Student-t (nu = 3, scale 0.8) against N(0, I), d = 3: p's tails are heavier than q's,
  so log p/q grows like |x|^2 where q has almost no samples (Monte Carlo KL as above).
"""

from __future__ import annotations

import json
import time

import jax
import numpy as np
from absl import flags
from scipy import stats

from iclr26_jax import minpv

N = 10_000
FLAGS = flags.FLAGS


def _define_flags():
  """Flags exist only when this file runs as a script (importing it defines none)."""
  flags.DEFINE_list("cases", ["g4", "g8", "ts", "t3"], "Which pairs (see the docstring).")
  flags.DEFINE_list("seeds", ["0", "1"], "Seeds (samples and fit).")
  flags.DEFINE_string("options", "{}", "fit_log_ratio options as JSON.")


def _gauss_kl(m1, s1, m2, s2):
  d = len(m1)
  inv = np.linalg.inv(s2)
  dm = m2 - m1
  return 0.5 * (
    np.trace(inv @ s1) + dm @ inv @ dm - d + np.log(np.linalg.det(s2) / np.linalg.det(s1))
  )


def _cov(rng, d, lo, hi):
  q, _ = np.linalg.qr(rng.normal(size=(d, d)))
  return q @ np.diag(rng.uniform(lo, hi, d)) @ q.T


def case(name: str, rng: np.random.Generator):
  """(x_p, x_q, fresh x_p, true KL) for one case."""
  if name in ("g4", "g8"):
    d = int(name[1:])
    r0 = np.random.default_rng(100 + d)  # the pair itself does not depend on the seed
    mp, sp = r0.normal(0, 0.4, d), _cov(r0, d, 0.3, 2.0)
    mq, sq = np.zeros(d), _cov(r0, d, 0.5, 1.5)
    draw = lambda m, s: rng.multivariate_normal(m, s, N)  # noqa: E731
    return draw(mp, sp), draw(mq, sq), draw(mp, sp), _gauss_kl(mp, sp, mq, sq)
  big = np.random.default_rng(7)
  if name == "ts":
    d, nu, shift = 4, 4.0, 0.8
    x = big.standard_t(nu, (2_000_000, d)) + shift
    kl = np.mean(stats.t.logpdf(x - shift, nu).sum(1) - stats.t.logpdf(x, nu).sum(1))
    draw_p = lambda: rng.standard_t(nu, (N, d)) + shift  # noqa: E731
    return draw_p(), rng.standard_t(nu, (N, d)), draw_p(), float(kl)
  if name == "t3":
    d, nu, scale = 3, 3.0, 0.8
    x = scale * big.standard_t(nu, (2_000_000, d))
    log_p = stats.t.logpdf(x / scale, nu).sum(1) - d * np.log(scale)
    kl = np.mean(log_p - stats.norm.logpdf(x).sum(1))
    draw_p = lambda: scale * rng.standard_t(nu, (N, d))  # noqa: E731
    return draw_p(), rng.normal(size=(N, d)), draw_p(), float(kl)
  raise ValueError(f"unknown case {name!r}; choose from g4, g8, ts, t3")


def main(argv):
  del argv
  options = json.loads(FLAGS.options)
  for name in FLAGS.cases:
    for seed in map(int, FLAGS.seeds):
      x_p, x_q, fresh, truth = case(name, np.random.default_rng(seed))
      t0 = time.time()
      ratio = minpv.fit_log_ratio(x_p, x_q, key=jax.random.PRNGKey(seed), **options)
      held, raw = ratio.kl(fresh), float(np.mean(ratio.integral(fresh)))
      print(
        f"{name} seed {seed}: KL {truth:.3f}, estimate {held:.3f} ({100 * (held / truth - 1):+.1f} "
        f"%) on fresh samples (uncalibrated {raw:.3f}, {100 * (raw / truth - 1):+.1f} %; a = "
        f"{ratio.scale:.3f}, b = {ratio.shift:+.3f}), {ratio.kl():.3f} on the fitted ones, "
        f"{time.time() - t0:.0f} s",
        flush=True,
      )


if __name__ == "__main__":
  from experiments import _cli

  _define_flags()
  _cli.app_run(main)
