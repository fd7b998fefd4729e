"""lmKAN vs MLP on the paper's general function-approximation task (32-D input, three hidden
layers of width h, random sin-MLP teacher). At laptop scale lmKAN is not expected to win here.

Variants: ``smoke``, ``mlp``.
"""

from iclr26_jax.core import config as config_lib
from iclr26_jax.lmkan.config import default_config


def get_config(arg=None):
  c = default_config()
  c.lmkan.task = "teacher"
  c.lmkan.hidden = (16, 16, 16)
  c.num_steps = 4000
  variants, _ = config_lib.parse_arg(arg)
  if "mlp" in variants:
    c.lmkan.model = "mlp"
    c.lmkan.hidden = (32, 32, 32)
  if "smoke" in variants:
    config_lib.apply_smoke(c, batch_size=64, **{"lmkan.test_size": 256})
  return config_lib.finalize(c, arg, known_variants=("smoke", "mlp"))
