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
  c.lmkan.task = "methane"  # the methane-like surrogate (CH4 energies)
  c.lmkan.model = "lmkan"
  c.lmkan.hidden = (8, 8)
  c.lmkan.grid_size = 8
  c.lmkan.hessian = True  # Hessian penalty, λ from 1 over 8 decades in phase 1
  c.num_steps = 6000
  c.batch_size = 512
  c.optim.learning_rate = 3e-3  # two_phase: constant for phase 1, then cosine to 0
  return config_lib.experiment(
    c,
    arg,
    {
      "mlp": {"lmkan.model": "mlp", "lmkan.hidden": (16, 16)},  # the same-shape ReLU MLP
      "nopenalty": {"lmkan.hessian": False},  # λ = 0 throughout
      "smoke": {**config_lib.SMOKE_TRAINER, "batch_size": 64, "lmkan.test_size": 256},
    },
  )
