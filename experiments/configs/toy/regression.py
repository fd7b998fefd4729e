"""Toy least-squares regression through the shared trainer (the core's known-answer run).

python -m experiments.main --config=experiments/configs/toy/regression.py:smoke --workdir=/tmp/toy
"""

from iclr26_jax.core import config as config_lib
from experiments import toy


def get_config(arg=None):
  c = toy.default_config()
  c.toy.dim = 8
  c.toy.hidden = ()  # a linear model: the closed-form least-squares optimum is known
  c.toy.num_examples = 4096
  c.toy.noise = 0.1
  c.num_steps = 2000
  c.batch_size = 256
  c.optim.learning_rate = 3e-2
  return config_lib.experiment(
    c,
    arg,
    {
      "smoke": {**config_lib.SMOKE_TRAINER, "batch_size": 32, "toy.num_examples": 256},
      "mlp": {"toy.hidden": (32, 32)},
    },
  )
