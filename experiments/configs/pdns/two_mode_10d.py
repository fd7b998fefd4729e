"""PDNS on the 10-D two-component mixture of spec §14 (weights 0.3 / 0.7, means 8 apart, unit
covariance, log Z = 2): log Z^, ESS and the sampled mode weight against the exact ones.

  python -m experiments.main --config=experiments/configs/pdns/two_mode_10d.py --workdir=/tmp/pdns_2m
  python -m experiments.main --config=experiments/configs/pdns/two_mode_10d.py:baseline --workdir=/tmp/pdns_2m_b
  python -m experiments.main --config=experiments/configs/pdns/two_mode_10d.py:target.dim=20 ...

Defaults: OU reference, sigma_bar = 3 (covers both means at distance 5.7 from the origin), alpha
linearly 20 -> 0.1 (int alpha = 10.05), 100 Euler–Maruyama steps, control parameterisation, MLP
2 x 128; adaptive eps = 1, Eq. 8b, resampling, buffer 4096, batch 256, 10 epochs per stage, at most
15 proximal stages then 3 at eta = infinity, Adam 1e-3, EMA 0.99. Variants: ``baseline``,
``smoke``. Overridable: ``target.dim`` (>= 2), ``target.beta``, ``prox.*``, ``sampler.*``.
"""

from iclr26_jax.core import config as config_lib
from iclr26_jax.pdns import method

VARIANTS = ("smoke", "baseline")


def get_config(arg=None):
  c = method.default_config()
  variants, _ = config_lib.parse_arg(arg)
  c.target.name = "two_mode_10d"
  c.target.dim = 10
  c.sampler.update(dict(sigma_bar=3.0, alpha_max=20.0, alpha_min=0.1, sde_steps=100, hidden=128,
                        depth=2))
  c.prox.update(dict(buffer_size=4096, epochs_per_stage=10, num_stages=15, refine_stages=3,
                     epsilon=1.0, learning_rate=1e-3, ema_decay=0.99))
  c.batch_size = 256
  method.apply_variants(c, variants, VARIANTS)
  return method.finish_config(config_lib.finalize(c, arg, known_variants=VARIANTS), arg)
