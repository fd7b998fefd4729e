"""Toy least-squares regression through the shared trainer (the core's known-answer run).

  python -m experiments.main --config=experiments/configs/toy/regression.py:smoke --workdir=/tmp/toy
"""

from iclr26_jax.core import config as config_lib
from iclr26_jax.core import toy


def get_config(arg=None):
  c = toy.default_config()
  variants, _ = config_lib.parse_arg(arg)
  if "smoke" in variants:
    c.num_steps = 20
    c.log_every = 5
    c.checkpoint_every = 10
    c.toy.num_examples = 256
    c.batch_size = 32
  if "mlp" in variants:
    c.toy.hidden = (32, 32)
  return config_lib.finalize(c, arg, known_variants=("smoke", "mlp"))
