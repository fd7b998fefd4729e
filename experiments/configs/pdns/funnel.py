"""PDNS on Neal's funnel (d = 10, x_1 ~ N(0, 9), x_{2:d} | x_1 ~ N(0, e^{x_1} I); log Z = 0).

  python -m experiments.main --config=experiments/configs/pdns/funnel.py --workdir=/tmp/pdns_funnel
  python -m experiments.main --config=experiments/configs/pdns/funnel.py:baseline --workdir=/tmp/pdns_funnel_b

Defaults: OU reference, sigma_bar = 3 (the scale of x_1), alpha linearly 20 -> 0.1, 100
Euler–Maruyama steps, MLP 2 x 128, adaptive eps = 1, resampling, buffer 4096, batch 256, 10
epochs per stage, at most 15 proximal stages then 3 at eta = infinity, Adam 1e-3, EMA 0.99. The
paper reports the funnel as competitive only (spec §13). Variants: ``baseline``, ``smoke``.
Overridable: ``target.dim``, ``target.beta``, ``prox.*``, ``sampler.*``.
"""

from iclr26_jax.core import config as config_lib
from iclr26_jax.pdns import method

VARIANTS = ("smoke", "baseline")


def get_config(arg=None):
  c = method.default_config()
  variants, _ = config_lib.parse_arg(arg)
  c.target.name = "funnel"
  c.target.dim = 10
  c.sampler.update(dict(sigma_bar=3.0, alpha_max=20.0, alpha_min=0.1, sde_steps=100, hidden=128,
                        depth=2))
  c.prox.update(dict(buffer_size=4096, epochs_per_stage=10, num_stages=15, refine_stages=3,
                     epsilon=1.0, learning_rate=1e-3, ema_decay=0.99))
  c.batch_size = 256
  method.apply_variants(c, variants, VARIANTS)
  return method.finish_config(config_lib.finalize(c, arg, known_variants=VARIANTS), arg)
