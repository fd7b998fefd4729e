"""PDNS on Neal's funnel (d = 10, x_1 ~ N(0, 9), x_{2:d} | x_1 ~ N(0, e^{x_1} I); log Z = 0).

  python -m experiments.main --config=experiments/configs/pdns/funnel.py --workdir=/tmp/pdns_funnel
  python -m experiments.main --config=experiments/configs/pdns/funnel.py:baseline --workdir=/tmp/pdns_funnel_b

Defaults: OU reference, sigma_bar = 3 (the scale of x_1), alpha linearly 20 -> 0.1, 100
Euler–Maruyama steps, MLP 2 x 128, adaptive eps = 1, resampling, buffer 4096, batch 256, 10
epochs per stage, at most 15 proximal stages then 3 at eta = infinity, Adam 1e-3, EMA 0.99. The
paper reports the funnel as competitive only (spec §13). Variants: ``baseline``, ``smoke``.
Overridable: ``target.dim``, ``target.beta``, ``prox.*``, ``optim.*``, ``sampler.*``.
"""

from iclr26_jax.pdns import method
from iclr26_jax.pdns.method import CONTINUOUS_OPTIM, CONTINUOUS_PROX, CONTINUOUS_SAMPLER


def get_config(arg=None):
  return method.experiment_config(
      arg, dict(name="funnel", dim=10), dict(CONTINUOUS_SAMPLER, sigma_bar=3.0), CONTINUOUS_PROX,
      batch_size=256, optim=CONTINUOUS_OPTIM)
