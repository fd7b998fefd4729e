"""PDNS on GMM-40 (40 equal-weight unit-variance components in d = 50, means uniform in
[-40, 40]^d from ``target.seed``; spec §11, §13): the continuous A/B target (accelerator scale).

  python -m experiments.main --config=experiments/configs/pdns/gmm40.py --workdir=/tmp/pdns_gmm40
  python -m experiments.main --config=experiments/configs/pdns/gmm40.py:baseline --workdir=/tmp/pdns_gmm40_b
  python -m experiments.main --config=experiments/configs/pdns/gmm40.py:target.dim=2 --workdir=/tmp/pdns_gmm40_2d

Defaults: OU reference with sigma_bar = 20 (a choice: the means spread over [-40, 40]; not a
published value), alpha linearly 20 -> 0.1, 100 Euler–Maruyama steps, MLP 3 x 256, adaptive
eps = 1, resampling, buffer 8192, batch 512, 10 epochs per stage, at most 30 proximal stages then
3 at eta = infinity, Adam 1e-3, EMA 0.99. Logged: log Z^ against log Z = 0, ESS and the TV of the
40 sampled mode weights (the corrected Sinkhorn evaluator of spec §12 is
``pdns.metrics.sinkhorn_corrected``, not run during training). Variants: ``baseline``,
``smoke`` (d = 4). Overridable: ``target.dim``, ``target.seed``, ``target.beta``, ``prox.*``,
``optim.*``, ``sampler.*``.
"""

from iclr26_jax.pdns import method
from iclr26_jax.pdns.method import CONTINUOUS_OPTIM, CONTINUOUS_PROX, CONTINUOUS_SAMPLER


def _smoke_dim(c):
  c.target.dim = 4


def get_config(arg=None):
  return method.experiment_config(
      arg, dict(name="gmm40", dim=50),
      dict(CONTINUOUS_SAMPLER, sigma_bar=20.0, hidden=256, depth=3),
      dict(CONTINUOUS_PROX, buffer_size=8192, num_stages=30), batch_size=512,
      optim=CONTINUOUS_OPTIM,
      extra_variants={"smoke": _smoke_dim})
