r"""Where MinPV's large-KL underestimate comes from: the learned time score of
``minpv.fit_log_ratio`` against the analytic one of the same bridge, per t, on a Gaussian pair
with a closed-form KL.

  python -m experiments.minpv_large_kl                              # d = 10, seed 0, defaults
  python -m experiments.minpv_large_kl --options='{"batch_size": 1024}'

Prints the KL estimate of ``minpv.fit_log_ratio`` against the closed form; the integral of the
analytic time score ∂_t log p_t(x) of the fitted bridge (p_t Gaussian: α m_q + β m_p, α² S_q +
β² S_p + v I in the whitened coordinates, on the trained path) over the same held-out points,
which separates the path and quadrature from the network; and, per band of t, the integrated
error of the learned score at those points and its mean absolute error on training points
x_t ~ p_t. The pair is ``tests/minpv/test_minpv_api.py``'s (means N(0, ¼) and N(1, ¼) per
coordinate, covariances AAᵀ + ½I and 2(BBᵀ + ½I)), drawn here with the same generator.
"""

import json
import os
import sys
import time

from absl import flags

_DIM = flags.DEFINE_integer("dim", 10, "Dimension of the Gaussian pair.")
_SEED = flags.DEFINE_integer("seed", 0, "Seed of the pair, the samples and the fit.")
_N = flags.DEFINE_integer("samples", 10000, "Samples of each side.")
_OPTIONS = flags.DEFINE_string("options", "{}", "JSON dict of fit_log_ratio options (steps, ...).")

BANDS = ((0.0, 0.05), (0.05, 0.2), (0.2, 0.5), (0.5, 0.8), (0.8, 0.95), (0.95, 1.0))


def gaussian_pair(d: int, seed: int):
  """``(rng, m_p, S_p, m_q, S_q)`` as in tests/minpv/test_minpv_api.py's ``_pair``."""
  import numpy as np

  rng = np.random.default_rng(seed)
  m1 = rng.normal(0, 0.5, d)
  a = rng.normal(size=(d, d)) / np.sqrt(d)
  m0 = rng.normal(0, 0.5, d) + 1.0
  b = rng.normal(size=(d, d)) / np.sqrt(d)
  return rng, m1, a @ a.T + 0.5 * np.eye(d), m0, 2.0 * (b @ b.T + 0.5 * np.eye(d))


def gaussian_kl(m1, s1, m0, s0) -> float:
  """KL(N(m1, s1) ‖ N(m0, s0))."""
  import numpy as np

  s0i = np.linalg.inv(s0)
  dm = m0 - m1
  return float(
    0.5
    * (np.trace(s0i @ s1) + dm @ s0i @ dm - len(m1) + np.log(np.linalg.det(s0) / np.linalg.det(s1)))
  )


def diagnose(dim: int, seed: int, samples: int, options: dict) -> dict:
  """Runs the fit and the comparison; returns the numbers it prints."""
  import jax
  import jax.numpy as jnp
  import numpy as np

  from iclr26_jax import minpv
  from iclr26_jax.minpv import paths as paths_lib

  rng, m1, s1, m0, s0 = gaussian_pair(dim, seed)
  truth = gaussian_kl(m1, s1, m0, s0)
  xp, xq = rng.multivariate_normal(m1, s1, samples), rng.multivariate_normal(m0, s0, samples)
  t0 = time.time()
  r = minpv.fit_log_ratio(xp, xq, key=jax.random.PRNGKey(seed), **options)
  held = rng.multivariate_normal(m1, s1, min(samples, 4000))
  est = r.kl(held)
  fit_s = time.time() - t0
  w, mean = r.whiten, r.mean
  mp, mq = (jnp.asarray(w @ (m - mean), jnp.float32) for m in (m1, m0))
  sp, sq = (jnp.asarray(w @ s @ w.T, jnp.float32) for s in (s1, s0))
  gamma = float(options.get("gamma", 1.0))

  def coeffs(t):
    co = r.path_fn(r.params["path"], t)
    v, _ = paths_lib.bridge_variance(co, t, gamma=gamma, eps_b=0.005)
    return co, v

  def log_pt(z, t):
    co, v = coeffs(t)
    cov = co.alpha**2 * sq + co.beta**2 * sp + v * jnp.eye(dim)
    chol = jnp.linalg.cholesky(cov)
    y = jax.scipy.linalg.solve_triangular(chol, z - (co.alpha * mq + co.beta * mp), lower=True)
    return -0.5 * y @ y - jnp.sum(jnp.log(jnp.diag(chol))) - 0.5 * dim * jnp.log(2 * jnp.pi)

  true_score = jax.jit(jax.vmap(jax.grad(log_pt, argnums=1), in_axes=(0, None)))
  net = jax.jit(
    lambda z, t: r.model.apply({"params": r.params["net"]}, z, jnp.full((z.shape[0],), t))[0]
  )
  whiten = lambda x: jnp.asarray((x - mean) @ w.T, jnp.float32)  # noqa: E731
  zh, zq, zp = whiten(held), whiten(xq[:4000]), whiten(xp[:4000])
  eps = paths_lib.EPS
  oracle = float(jnp.mean(jax.vmap(lambda z: log_pt(z, 1 - eps) - log_pt(z, eps))(zh)))
  ts = np.linspace(eps, 1 - eps, 101)
  rows, key = [], jax.random.PRNGKey(99)
  for t in ts:
    key, k1, k2 = jax.random.split(key, 3)
    co, v = coeffs(jnp.float32(t))
    zt = co.alpha * zq + co.beta * zp[jax.random.permutation(k1, zp.shape[0])]
    zt = zt + jnp.sqrt(v) * jax.random.normal(k2, zt.shape)
    rows.append(
      (
        float(co.alpha),
        float(jnp.mean(true_score(zh, t))),
        float(jnp.mean(net(zh, t) - true_score(zh, t))),
        float(jnp.mean(jnp.abs(true_score(zt, t)))),
        float(jnp.mean(jnp.abs(net(zt, t) - true_score(zt, t)))),
      )
    )
  rows = np.asarray(rows)

  def integral(mask, col):
    tt, f = ts[mask], rows[mask, col]
    return float(np.sum(np.diff(tt) * (f[1:] + f[:-1]) / 2))

  bands = []
  for lo, hi in BANDS:
    m = (ts >= lo) & (ts <= hi)
    bands.append(
      dict(
        band=(lo, hi),
        true=integral(m, 1),
        error=integral(m, 2),
        train_abs_true=float(rows[m, 3].mean()),
        train_abs_error=float(rows[m, 4].mean()),
      )
    )
  every = np.ones_like(ts, bool)
  return dict(
    truth=truth,
    estimate=est,
    fit_seconds=fit_s,
    analytic=oracle,
    error=integral(every, 2),
    bands=bands,
  )


def main(argv):
  del argv
  options = json.loads(_OPTIONS.value)
  out = diagnose(_DIM.value, _SEED.value, _N.value, options)
  rel = (out["estimate"] - out["truth"]) / out["truth"]
  print(
    f"d {_DIM.value} seed {_SEED.value} options {options}: KL truth {out['truth']:.3f}, "
    f"estimate {out['estimate']:.3f} ({rel:+.1%}; fit {out['fit_seconds']:.0f} s)"
  )
  print(f"analytic time score of the fitted bridge, integrated: {out['analytic']:.3f}")
  print(f"integrated error of the learned score at the held-out points: {out['error']:+.3f}")
  for b in out["bands"]:
    lo, hi = b["band"]
    print(
      f"  t in [{lo:.2f}, {hi:.2f}]: true {b['true']:7.3f}, error {b['error']:+7.3f} | "
      f"training points: mean |true| {b['train_abs_true']:6.2f}, mean |error| "
      f"{b['train_abs_error']:6.2f}"
    )


if __name__ == "__main__":
  # Also run as a file (python experiments/<name>.py): the repository root on the path first.
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  from experiments import _cli

  _cli.app_run(main)
