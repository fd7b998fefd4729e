"""BC-flow baseline on the JAX point maze: QAM with λ = 0, actions from v_β.

  python -m experiments.main --config=experiments/configs/qam/pointmaze_bc.py --workdir=/tmp/pointmaze_bc
  python -m experiments.main --config=experiments/configs/qam/pointmaze_bc.py:online --workdir=...

BC flow: the behaviour flow alone; the critic is trained for diagnostics only.

Shared settings, variants and overrides: ``experiments/configs/qam/__init__.py``.
"""

from experiments.configs.qam import pointmaze


def get_config(arg=None):
  return pointmaze(arg, agent_name="bc", inv_temp=0.0)
