r"""MinPV's KL estimate at given settings on pairs with a known KL (the accuracy table of the
MinPV docs page).

  python -m experiments.minpv_accuracy                      # the defaults, seeds 0 and 1
  python -m experiments.minpv_accuracy --cases=g4 --seeds=1 --options='{"steps": 6000}'
  python -m experiments.minpv_accuracy --cases=g4,g8 --n=40000 --floor=20

Cases (``--n`` samples of each side, 10,000 by default; the KL on ``--n`` fresh samples of p):

* ``g4`` / ``g8``: Gaussian pairs with full covariances in d = 4 / 8 (closed-form KL);
* ``ts``: Student-t (nu = 4) shifted by 0.8 per coordinate against the same t centred, d = 4: heavy
  tails on both sides, a bounded log ratio (KL by Monte Carlo on 2 million points of the exact
  densities);
* ``t3``: a Student-t (nu = 3, scale 0.8) against N(0, I), d = 3: p's tails are heavier than q's,
  so log p/q grows like |x|^2 where q has almost no samples (Monte Carlo KL as above).

For the Gaussian pairs each line also gives what the samples themselves allow: the KL of a
logistic regression of p against q on the samples' linear and quadratic terms (the family the
Gaussian log ratio belongs to, so its only error is the sample's), fitted on the same samples
and evaluated on the same fresh points. ``--floor=K`` adds that estimator's spread over K more
samples of the pair (no network fit): the error no estimator avoids at that ``--n``.
"""

from __future__ import annotations

import json
import time

import jax
import numpy as np
from absl import flags
from scipy import stats
from sklearn.linear_model import LogisticRegression

from iclr26_jax import minpv

N = 10_000
FLAGS = flags.FLAGS


def _define_flags():
  """Flags exist only when this file runs as a script (importing it defines none)."""
  flags.DEFINE_list("cases", ["g4", "g8", "ts", "t3"], "Which pairs (see the docstring).")
  flags.DEFINE_list("seeds", ["0", "1"], "Seeds (samples and fit).")
  flags.DEFINE_string("options", "{}", "fit_log_ratio options as JSON.")
  flags.DEFINE_integer("n", 10_000, "Samples of each side (and fresh samples of p).")
  flags.DEFINE_integer(
    "floor", 0, "Gaussian pairs: the quadratic logistic KL over this many more samples."
  )


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


def quadratic_logistic_kl(x_p, x_q, fresh) -> float:
  """KL from a logistic regression of p against q on (x, x_i x_j): exact family for Gaussians."""

  def feats(x):
    i, j = np.triu_indices(x.shape[1])
    return np.concatenate([x, x[:, i] * x[:, j]], 1)

  y = np.r_[np.ones(len(x_p)), np.zeros(len(x_q))]
  fit = LogisticRegression(C=1e6, max_iter=5000).fit(np.concatenate([feats(x_p), feats(x_q)]), y)
  return float(np.mean(fit.decision_function(feats(fresh)))) - np.log(len(x_p) / len(x_q))


def case(name: str, rng: np.random.Generator, n: int = N):
  """(x_p, x_q, fresh x_p, true KL) for one case, n samples each."""
  if name in ("g4", "g8"):
    d = int(name[1:])
    r0 = np.random.default_rng(100 + d)  # the pair itself does not depend on the seed
    mp, sp = r0.normal(0, 0.4, d), _cov(r0, d, 0.3, 2.0)
    mq, sq = np.zeros(d), _cov(r0, d, 0.5, 1.5)
    draw = lambda m, s: rng.multivariate_normal(m, s, n)  # noqa: E731
    return draw(mp, sp), draw(mq, sq), draw(mp, sp), _gauss_kl(mp, sp, mq, sq)
  big = np.random.default_rng(7)
  if name == "ts":
    d, nu, shift = 4, 4.0, 0.8
    x = big.standard_t(nu, (2_000_000, d)) + shift
    kl = np.mean(stats.t.logpdf(x - shift, nu).sum(1) - stats.t.logpdf(x, nu).sum(1))
    draw_p = lambda: rng.standard_t(nu, (n, d)) + shift  # noqa: E731
    return draw_p(), rng.standard_t(nu, (n, d)), draw_p(), float(kl)
  if name == "t3":
    d, nu, scale = 3, 3.0, 0.8
    x = scale * big.standard_t(nu, (2_000_000, d))
    log_p = stats.t.logpdf(x / scale, nu).sum(1) - d * np.log(scale)
    kl = np.mean(log_p - stats.norm.logpdf(x).sum(1))
    draw_p = lambda: scale * rng.standard_t(nu, (n, d))  # noqa: E731
    return draw_p(), rng.normal(size=(n, d)), draw_p(), float(kl)
  raise ValueError(f"unknown case {name!r}; choose from g4, g8, ts, t3")


def main(argv):
  del argv
  options = json.loads(FLAGS.options)
  pct = lambda v, truth: f"{100 * (v / truth - 1):+.1f} %"  # noqa: E731
  for name in FLAGS.cases:
    gaussian = name in ("g4", "g8")
    if gaussian and FLAGS.floor:
      errs = []
      for s in range(1000, 1000 + FLAGS.floor):
        x_p, x_q, fresh, truth = case(name, np.random.default_rng(s), FLAGS.n)
        errs.append(100 * (quadratic_logistic_kl(x_p, x_q, fresh) / truth - 1))
      print(
        f"{name}, n = {FLAGS.n}: the quadratic logistic KL over {FLAGS.floor} samples: mean "
        f"{np.mean(errs):+.1f} %, std {np.std(errs, ddof=1):.1f} %, largest |error| "
        f"{np.max(np.abs(errs)):.1f} %",
        flush=True,
      )
    for seed in map(int, FLAGS.seeds):
      x_p, x_q, fresh, truth = case(name, np.random.default_rng(seed), FLAGS.n)
      oracle = ""
      if gaussian:
        oracle = f"; quadratic logistic {pct(quadratic_logistic_kl(x_p, x_q, fresh), truth)}"
      t0 = time.time()
      ratio = minpv.fit_log_ratio(x_p, x_q, key=jax.random.PRNGKey(seed), **options)
      held, raw = ratio.kl(fresh), float(np.mean(ratio.integral(fresh)))
      print(
        f"{name} seed {seed}: KL {truth:.3f}, estimate {held:.3f} ({pct(held, truth)}) on fresh "
        f"samples (uncalibrated {raw:.3f}, {pct(raw, truth)}; a = {ratio.scale:.3f}, b = "
        f"{ratio.shift:+.3f}), {ratio.kl():.3f} on the fitted ones, {time.time() - t0:.0f} s"
        + oracle,
        flush=True,
      )


if __name__ == "__main__":
  from experiments import _cli

  _define_flags()
  _cli.app_run(main)
