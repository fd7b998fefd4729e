"""QAM-F on the JAX point maze: a one-step policy distilled from the QAM flow.

  python -m experiments.main --config=experiments/configs/qam/pointmaze_qam_f.py --workdir=/tmp/pointmaze_qam_f
  python -m experiments.main --config=experiments/configs/qam/pointmaze_qam_f.py:online --workdir=...

QAM-F: λ = 0.3, α_F = 10; the one-step policy maximises Q with distillation toward v_θ's ODE and
is used for TD targets and evaluation.

Shared settings, variants and overrides: ``experiments/configs/qam/__init__.py``.
"""

from experiments.configs.qam import pointmaze


def get_config(arg=None):
  return pointmaze(arg, agent_name="qam", inv_temp=0.3, fql_alpha=10.0)
