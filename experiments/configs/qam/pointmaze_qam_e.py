"""QAM-E on the JAX point maze: a tanh-Gaussian edit on top of the QAM flow.

  python -m experiments.main --config=experiments/configs/qam/pointmaze_qam_e.py --workdir=/tmp/pointmaze_qam_e
  python -m experiments.main --config=experiments/configs/qam/pointmaze_qam_e.py:online --workdir=...

QAM-E: λ = 0.3, edit scale η = 0.1, auto-tuned entropy temperature.

Shared settings, variants and overrides: ``experiments/configs/qam/__init__.py``.
"""

from experiments.configs.qam import pointmaze


def get_config(arg=None):
  return pointmaze(arg, agent_name="qam", inv_temp=0.3, edit_scale=0.1)
