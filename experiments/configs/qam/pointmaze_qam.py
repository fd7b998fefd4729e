"""QAM on the JAX point maze: noisy multimodal play data, sparse reward.

  python -m experiments.main --config=experiments/configs/qam/pointmaze_qam.py --workdir=/tmp/pointmaze_qam
  python -m experiments.main --config=experiments/configs/qam/pointmaze_qam.py:online --workdir=...

Plain QAM: the flow v_θ fine-tuned by lean adjoint matching, λ = 0.3.

Shared settings, variants and overrides: ``experiments/configs/qam/__init__.py``.
"""

from experiments.configs.qam import pointmaze


def get_config(arg=None):
  return pointmaze(arg, agent_name="qam", inv_temp=0.3)
