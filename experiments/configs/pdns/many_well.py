"""PDNS on the many-well MW54 (d = 5, five double wells (x^2 - 4)^2, 32 equal-weight modes, exact
log Z by quadrature): mode coverage through the TV of the 32 sampled mode weights.

  python -m experiments.main --config=experiments/configs/pdns/many_well.py --workdir=/tmp/pdns_mw
  python -m experiments.main --config=experiments/configs/pdns/many_well.py:baseline --workdir=/tmp/pdns_mw_b

Defaults (spec §9 reference values for MW54: adjoint parameterisation, control loss, eps = 1):
OU reference, sigma_bar = 2 (wells at +-2), alpha linearly 20 -> 0.1, 100 Euler–Maruyama steps,
MLP 2 x 128, resampling, buffer 4096 (the reference uses 10 000), batch 256, 10 epochs per stage
(the reference: 100), at most 15 proximal stages then 3 at eta = infinity, Adam 1e-3, EMA 0.99.
Variants: ``baseline``, ``smoke``. Overridable: ``target.dim`` (>= 5 adds Gaussian coordinates),
``target.beta``, ``prox.*``, ``sampler.*``.
"""

from iclr26_jax.core import config as config_lib
from iclr26_jax.pdns import method

VARIANTS = ("smoke", "baseline")


def get_config(arg=None):
  c = method.default_config()
  variants, _ = config_lib.parse_arg(arg)
  c.target.name = "many_well"
  c.target.dim = 5
  c.sampler.update(dict(sigma_bar=2.0, alpha_max=20.0, alpha_min=0.1, sde_steps=100, hidden=128,
                        depth=2, param="adjoint", loss="control"))
  c.prox.update(dict(buffer_size=4096, epochs_per_stage=10, num_stages=15, refine_stages=3,
                     epsilon=1.0, learning_rate=1e-3, ema_decay=0.99))
  c.batch_size = 256
  method.apply_variants(c, variants, VARIANTS)
  return method.finish_config(config_lib.finalize(c, arg, known_variants=VARIANTS), arg)
