"""QAM-E on the JAX point maze: a tanh-Gaussian edit on top of the QAM flow (spec §9).

  python -m experiments.main --config=experiments/configs/qam/pointmaze_qam_e.py --workdir=/tmp/qam_pointmaze_qam_e
  python -m experiments.main --config=experiments/configs/qam/pointmaze_qam_e.py:online --workdir=...

QAM-E: λ = 1, edit scale η = 0.1, auto-tuned entropy temperature. Variants: ``smoke``, ``online`` (the last quarter of the steps
interacts with the point maze, replay seeded with the offline data). Override any field as
``key=value`` (e.g. ``agent.inv_temp=3,seed=1``).
"""

from iclr26_jax.qam.method import POINTMAZE_AGENT, experiment_config


def get_config(arg=None):
  return experiment_config(arg, {**POINTMAZE_AGENT, "agent_name": "qam", "inv_temp": 1.0, "edit_scale": 0.1})
