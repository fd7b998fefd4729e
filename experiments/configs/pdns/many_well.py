"""PDNS on the many-well MW54 (d = 5, five double wells (x^2 - 4)^2, 32 equal-weight modes, exact
log Z by quadrature): mode coverage through the TV of the 32 sampled mode weights.

  python -m experiments.main --config=experiments/configs/pdns/many_well.py --workdir=/tmp/pdns_mw
  python -m experiments.main --config=experiments/configs/pdns/many_well.py:baseline --workdir=/tmp/pdns_mw_b

Defaults (the reference code's values for MW54: adjoint parameterisation, control loss, eps = 1):
OU reference, sigma_bar = 2 (wells at +-2), alpha linearly 20 -> 0.1, 100 Euler–Maruyama steps,
MLP 2 x 128, resampling, buffer 4096 (the reference uses 10 000), batch 256, 10 epochs per stage
(the reference: 100), at most 15 proximal stages then 3 at eta = infinity, Adam 1e-3, EMA 0.99.
Variants: ``baseline``, ``smoke``. Overridable: ``target.dim`` (>= 5 adds Gaussian coordinates),
``target.beta``, ``prox.*``, ``optim.*``, ``sampler.*``.
"""

from iclr26_jax.core import config as config_lib
from iclr26_jax.pdns import method


def get_config(arg=None):
  c = method.default_config()
  c.target.name = "many_well"
  c.target.dim = 5
  # the control network and its SDE: OU reference, alpha_max -> alpha_min, Euler–Maruyama steps
  c.sampler.alpha_max = 20.0
  c.sampler.alpha_min = 0.1
  c.sampler.sde_steps = 100
  c.sampler.hidden = 128
  c.sampler.depth = 2
  c.sampler.sigma_bar = 2.0
  c.sampler.param = "adjoint"
  c.sampler.loss = "control"
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
  return config_lib.experiment(
    c, arg, {"baseline": method.BASELINE, "smoke": method.smoke}, validate=method.prox_config
  )
