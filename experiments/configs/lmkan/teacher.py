"""lmKAN vs MLP on the paper's general function-approximation task (32-D input, three hidden
layers of width h, random sin-MLP teacher). At laptop scale lmKAN is not expected to win here.

Variants: ``smoke``, ``mlp``, ``paper`` (accelerator scale: the paper's largest lmKAN point of
Fig. 1, h = 128, i.e. 32 -> 128 -> 128 -> 128 -> 1, for the training recipe's 6000 steps; the
paper states no batch size, so it stays 512).
"""

from iclr26_jax.core import config as config_lib
from iclr26_jax.lmkan.config import default_config


def get_config(arg=None):
  c = default_config()
  c.lmkan.task = "teacher"
  c.lmkan.hidden = (16, 16, 16)
  c.lmkan.teacher_activation = "sin"
  c.num_steps = 4000
  c.batch_size = 512
  c.optim.learning_rate = 3e-3
  return config_lib.experiment(
    c,
    arg,
    {
      "mlp": {"lmkan.model": "mlp", "lmkan.hidden": (32, 32, 32)},
      "paper": {"lmkan.hidden": (128, 128, 128), "num_steps": 6000},
      "smoke": {**config_lib.SMOKE_TRAINER, "batch_size": 64, "lmkan.test_size": 256},
    },
  )
