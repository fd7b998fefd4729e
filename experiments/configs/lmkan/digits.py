"""lmKAN CNN vs a ReLU CNN of the same shape on scikit-learn's bundled 8×8 digits.

Variants: ``smoke``, ``cnn`` (the baseline).
"""

from iclr26_jax.core import config as config_lib
from iclr26_jax.lmkan.config import default_config


def get_config(arg=None):
  c = default_config()
  c.lmkan.task = "digits"
  c.lmkan.model = "lmkan_cnn"
  c.lmkan.channels = (8,)
  c.num_steps = 2000
  c.batch_size = 128
  c.log_every = 200
  c.checkpoint_every = 1000
  return config_lib.experiment(
    c,
    arg,
    {
      "cnn": {"lmkan.model": "cnn"},  # the ReLU CNN baseline
      "smoke": {**config_lib.SMOKE_TRAINER, "batch_size": 32},
    },
  )
