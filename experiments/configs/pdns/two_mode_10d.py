"""PDNS on the 10-D two-component mixture (weights 0.3 / 0.7, means 8 apart, unit covariance,
log Z = 2): log Z^, ESS and the sampled mode weight against the exact ones.

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

from iclr26_jax.core import config as config_lib
from iclr26_jax.pdns import method


def settings(target: str = "two_mode_10d"):
  """The settings above for ``target`` (the funnel's config shares them), unlocked."""
  c = method.default_config()
  c.target.name = target
  c.target.dim = 10
  # the control network and its SDE: OU reference, alpha_max -> alpha_min, Euler–Maruyama steps
  c.sampler.alpha_max = 20.0
  c.sampler.alpha_min = 0.1
  c.sampler.sde_steps = 100
  c.sampler.hidden = 128
  c.sampler.depth = 2
  c.sampler.sigma_bar = 3.0
  # proximal stages: buffer, epochs per stage, stages then refine_stages at eta = infinity
  c.prox.buffer_size = 4096
  c.prox.epochs_per_stage = 10
  c.prox.num_stages = 15
  c.prox.refine_stages = 3
  c.prox.epsilon = 1.0
  c.prox.ema_decay = 0.99
  c.batch_size = 256
  # the stage optimiser (Adam, fresh every stage)
  c.optim.learning_rate = 1e-3
  return c


def get_config(arg=None):
  return config_lib.experiment(
    settings(),
    arg,
    {"baseline": method.BASELINE, "smoke": method.smoke},
    validate=method.prox_config,
  )
