"""Toy least-squares regression through the shared trainer (the core's known-answer run).

  python -m experiments.main --config=experiments/configs/toy/regression.py:smoke --workdir=/tmp/toy
"""

from iclr26_jax.core import config as config_lib
from iclr26_jax.core import toy


def get_config(arg=None):
  c = toy.default_config()
  variants, _ = config_lib.parse_arg(arg)
  if "smoke" in variants:
    config_lib.apply_smoke(c, batch_size=32, **{"toy.num_examples": 256})
  if "mlp" in variants:
    c.toy.hidden = (32, 32)
  return config_lib.finalize(c, arg, known_variants=("smoke", "mlp"))
