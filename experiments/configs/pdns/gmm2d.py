"""PDNS on the 2-D two-component Gaussian mixture (weights 0.3 / 0.7, means (+-2, 0), std 0.7,
log Z = 1.5): the quick continuous check of log Z^, ESS and mode weights.

  python -m experiments.main --config=experiments/configs/pdns/gmm2d.py --workdir=/tmp/pdns_gmm2d
  python -m experiments.main --config=experiments/configs/pdns/gmm2d.py:baseline --workdir=/tmp/pdns_gmm2d_b
  python -m experiments.main --config=experiments/configs/pdns/gmm2d.py:prox.epsilon=0.5,seed=1 ...

Defaults: OU reference, sigma_bar = 2, alpha linearly 20 -> 0.1 (int alpha = 10.05, residual
correlation 0.007; the released code's 10 -> 0.1 leaves 0.08), 100 Euler–Maruyama steps, control
parameterisation and loss, MLP 2 x 64; adaptive step size with eps = 1 (reference MW54 / LJ-13
value), Eq. 8b stage target, multinomial resampling (every released continuous config),
buffer 2048, batch 256, 10 epochs per stage, at most 10 proximal stages then 3 at eta = infinity,
Adam 1e-3, grad clip 100, weight clamp 100, EMA 0.99 (the reference's 0.999 assumes far longer
stages). Variants: ``baseline`` (eta = infinity from the start), ``smoke``. Overridable:
``target.beta`` (tempering; exact log Z only at 1), ``prox.*``, ``optim.*``, ``sampler.*``.
"""

from iclr26_jax.pdns import method
from iclr26_jax.pdns.method import CONTINUOUS_OPTIM, CONTINUOUS_PROX, CONTINUOUS_SAMPLER


def get_config(arg=None):
  return method.experiment_config(
      arg, dict(name="gmm2d", dim=2), dict(CONTINUOUS_SAMPLER, sigma_bar=2.0, hidden=64),
      dict(CONTINUOUS_PROX, buffer_size=2048, num_stages=10), batch_size=256,
      optim=CONTINUOUS_OPTIM)
