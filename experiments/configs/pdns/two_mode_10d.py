"""PDNS on the 10-D two-component mixture of spec §14 (weights 0.3 / 0.7, means 8 apart, unit
covariance, log Z = 2): log Z^, ESS and the sampled mode weight against the exact ones.

  python -m experiments.main --config=experiments/configs/pdns/two_mode_10d.py --workdir=/tmp/pdns_2m
  python -m experiments.main --config=experiments/configs/pdns/two_mode_10d.py:baseline --workdir=/tmp/pdns_2m_b
  python -m experiments.main --config=experiments/configs/pdns/two_mode_10d.py:target.dim=20 ...

Defaults: OU reference, sigma_bar = 3 (covers both means at distance 5.7 from the origin), alpha
linearly 20 -> 0.1 (int alpha = 10.05), 100 Euler–Maruyama steps, control parameterisation, MLP
2 x 128; adaptive eps = 1, Eq. 8b, resampling, buffer 4096, batch 256, 10 epochs per stage, at most
15 proximal stages then 3 at eta = infinity, Adam 1e-3, EMA 0.99. Variants: ``baseline``,
``smoke``. Overridable: ``target.dim`` (>= 2), ``target.beta``, ``prox.*``, ``optim.*``,
``sampler.*``.
"""

from iclr26_jax.pdns import method
from iclr26_jax.pdns.method import CONTINUOUS_OPTIM, CONTINUOUS_PROX, CONTINUOUS_SAMPLER


def get_config(arg=None):
  return method.experiment_config(
      arg, dict(name="two_mode_10d", dim=10), dict(CONTINUOUS_SAMPLER, sigma_bar=3.0),
      CONTINUOUS_PROX, batch_size=256, optim=CONTINUOUS_OPTIM)
