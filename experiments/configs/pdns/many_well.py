"""PDNS on the many-well MW54 (d = 5, five double wells (x^2 - 4)^2, 32 equal-weight modes, exact
log Z by quadrature): mode coverage through the TV of the 32 sampled mode weights.

  python -m experiments.main --config=experiments/configs/pdns/many_well.py --workdir=/tmp/pdns_mw
  python -m experiments.main --config=experiments/configs/pdns/many_well.py:baseline --workdir=/tmp/pdns_mw_b

Defaults (spec §9 reference values for MW54: adjoint parameterisation, control loss, eps = 1):
OU reference, sigma_bar = 2 (wells at +-2), alpha linearly 20 -> 0.1, 100 Euler–Maruyama steps,
MLP 2 x 128, resampling, buffer 4096 (the reference uses 10 000), batch 256, 10 epochs per stage
(the reference: 100), at most 15 proximal stages then 3 at eta = infinity, Adam 1e-3, EMA 0.99.
Variants: ``baseline``, ``smoke``. Overridable: ``target.dim`` (>= 5 adds Gaussian coordinates),
``target.beta``, ``prox.*``, ``optim.*``, ``sampler.*``.
"""

from iclr26_jax.pdns import method
from iclr26_jax.pdns.method import CONTINUOUS_OPTIM, CONTINUOUS_PROX, CONTINUOUS_SAMPLER


def get_config(arg=None):
  return method.experiment_config(
      arg, dict(name="many_well", dim=5),
      dict(CONTINUOUS_SAMPLER, sigma_bar=2.0, param="adjoint", loss="control"), CONTINUOUS_PROX,
      batch_size=256, optim=CONTINUOUS_OPTIM)
