"""PDNS on GMM-40 (40 equal-weight unit-variance components in d = 50, means uniform in
[-40, 40]^d from ``target.seed``): the continuous A/B target (accelerator scale).

  python -m experiments.main --config=experiments/configs/pdns/gmm40.py --workdir=/tmp/pdns_gmm40
  python -m experiments.main --config=experiments/configs/pdns/gmm40.py:baseline --workdir=/tmp/pdns_gmm40_b
  python -m experiments.main --config=experiments/configs/pdns/gmm40.py:target.dim=2 --workdir=/tmp/pdns_gmm40_2d

Defaults: OU reference with sigma_bar = 20 (a choice: the means spread over [-40, 40]; not a
published value), alpha linearly 20 -> 0.1, 100 Euler–Maruyama steps, MLP 3 x 256, adaptive
eps = 1, resampling, buffer 8192, batch 512, 10 epochs per stage, at most 30 proximal stages then
3 at eta = infinity, Adam 1e-3, EMA 0.99. Logged: log Z^ against log Z = 0, ESS and the TV of the
40 sampled mode weights (the corrected Sinkhorn evaluator, ``pdns.metrics.sinkhorn_corrected``,
is not run during training; the authors state that the paper's Table 1 understates GMM-40's
Sinkhorn values). Variants: ``baseline``, ``smoke`` (d = 4). Overridable: ``target.dim``,
``target.seed``, ``target.beta``, ``prox.*``, ``optim.*``, ``sampler.*``.
"""

from iclr26_jax.core import config as config_lib
from iclr26_jax.pdns import method


def _smoke(c):
  method.smoke(c)
  c.target.dim = 4


def get_config(arg=None):
  c = method.default_config()
  c.target.name = "gmm40"
  c.target.dim = 50
  # the control network and its SDE: OU reference, alpha_max -> alpha_min, Euler–Maruyama steps
  c.sampler.alpha_max = 20.0
  c.sampler.alpha_min = 0.1
  c.sampler.sde_steps = 100
  c.sampler.hidden = 256
  c.sampler.depth = 3
  c.sampler.sigma_bar = 20.0
  # proximal stages: buffer, epochs per stage, stages then refine_stages at eta = infinity
  c.prox.buffer_size = 8192
  c.prox.epochs_per_stage = 10
  c.prox.num_stages = 30
  c.prox.refine_stages = 3
  c.prox.epsilon = 1.0
  c.prox.ema_decay = 0.99
  c.batch_size = 512
  # the stage optimiser (Adam, fresh every stage)
  c.optim.learning_rate = 1e-3
  return config_lib.experiment(
    c, arg, {"baseline": method.BASELINE, "smoke": _smoke}, validate=method.prox_config
  )
