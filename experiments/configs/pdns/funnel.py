"""PDNS on Neal's funnel (d = 10, x_1 ~ N(0, 9), x_{2:d} | x_1 ~ N(0, e^{x_1} I); log Z = 0).

  python -m experiments.main --config=experiments/configs/pdns/funnel.py --workdir=/tmp/pdns_funnel
  python -m experiments.main --config=experiments/configs/pdns/funnel.py:baseline --workdir=/tmp/pdns_funnel_b

Defaults: OU reference, sigma_bar = 3 (the scale of x_1), alpha linearly 20 -> 0.1, 100
Euler–Maruyama steps, MLP 2 x 128, adaptive eps = 1, resampling, buffer 4096, batch 256, 10
epochs per stage, at most 15 proximal stages then 3 at eta = infinity, Adam 1e-3, EMA 0.99. The
paper reports the funnel as competitive only. Variants: ``baseline``, ``smoke``.
Overridable: ``target.dim``, ``target.beta``, ``prox.*``, ``optim.*``, ``sampler.*``.
"""

from experiments.configs.pdns import two_mode_10d
from iclr26_jax.core import config as config_lib
from iclr26_jax.pdns import method


def get_config(arg=None):
  return config_lib.experiment(
    two_mode_10d.settings("funnel"),  # the two-mode settings, on the funnel
    arg,
    {"baseline": method.BASELINE, "smoke": method.smoke},
    validate=method.prox_config,
  )
