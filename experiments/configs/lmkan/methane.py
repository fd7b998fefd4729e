"""lmKAN (or the ReLU MLP baseline) on the methane-like surrogate, laptop-scale protocol.

  python -m experiments.main --config=experiments/configs/lmkan/methane.py --workdir=/tmp/lmkan_ch4
  python -m experiments.main --config=experiments/configs/lmkan/methane.py:mlp,lmkan.hidden=(32,32) ...

Variants: ``smoke`` (a few steps), ``mlp`` (the same-shape ReLU MLP baseline), ``nopenalty``
(λ = 0 throughout).
"""

from iclr26_jax.core import config as config_lib
from iclr26_jax.lmkan.config import default_config


def get_config(arg=None):
  c = default_config()
  variants, _ = config_lib.parse_arg(arg)
  if "mlp" in variants:
    c.lmkan.model = "mlp"
    c.lmkan.hidden = (16, 16)
  if "nopenalty" in variants:
    c.lmkan.hessian = False
  if "smoke" in variants:
    config_lib.apply_smoke(c, batch_size=64, **{"lmkan.test_size": 256})
  return config_lib.finalize(c, arg, known_variants=("smoke", "mlp", "nopenalty"))
