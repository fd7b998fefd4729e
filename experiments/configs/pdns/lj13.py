"""PDNS on LJ-13 (13 particles in 3-D, d = 39, Lennard-Jones with eps = r_m = 1 plus a unit
harmonic term towards the centre of mass) with the centre-of-mass-free OU reference (noise and
source on the 36-D zero-CoM subspace, log nu with 36 degrees of freedom). No exact log Z:
``eval/log_z`` is an estimate; ``eval/energy_mean`` tracks the sampled energies (the paper's
metric is the energy W2 against long-MCMC samples, not computed here).

  python -m experiments.main --config=experiments/configs/pdns/lj13.py --workdir=/tmp/pdns_lj13
  python -m experiments.main --config=experiments/configs/pdns/lj13.py:baseline --workdir=/tmp/pdns_lj13_b
  python -m experiments.main --config=experiments/configs/pdns/lj13.py:prox.step_size=fixed,prox.c_fixed=0.1 ...

Defaults (spec §9 reference values for LJ-13): OU reference with sigma_bar = 2, alpha linearly
20 -> 0.1 (int alpha = 10.05), 100 Euler–Maruyama steps, control parameterisation and loss, MLP
3 x 256 (not equivariant); adaptive step size with eps = 1 (or fixed c = 0.1, see above), Eq. 8b
stage target, multinomial resampling, buffer 10 000, batch 1000, 200 epochs per stage, at most
10 proximal stages then 3 at eta = infinity, Adam lr 1e-4 with betas (0.5, 0.9), grad clip 100,
weight clamp 100, EMA 0.999. Accelerator-scale at these defaults. Variants: ``baseline``
(eta = infinity from the start), ``smoke``. Overridable: ``target.beta``, ``prox.*``,
``sampler.*``.
"""

from iclr26_jax.pdns import method
from iclr26_jax.pdns.method import CONTINUOUS_PROX, CONTINUOUS_SAMPLER


def get_config(arg=None):
  return method.experiment_config(
      arg, dict(name="lj13", dim=39), dict(CONTINUOUS_SAMPLER, sigma_bar=2.0, hidden=256, depth=3),
      dict(CONTINUOUS_PROX, buffer_size=10000, epochs_per_stage=200, num_stages=10,
           learning_rate=1e-4, b1=0.5, b2=0.9, ema_decay=0.999), batch_size=1000)
