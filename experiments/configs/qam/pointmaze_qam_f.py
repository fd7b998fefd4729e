"""QAM-F on the JAX point maze: a one-step policy distilled from the QAM flow (spec §9).

  python -m experiments.main --config=experiments/configs/qam/pointmaze_qam_f.py --workdir=/tmp/qam_pointmaze_qam_f
  python -m experiments.main --config=experiments/configs/qam/pointmaze_qam_f.py:online --workdir=...

QAM-F: λ = 1, α_F = 10 (one-step policy maximising Q with distillation toward v_θ's ODE), used for TD targets and evaluation. Variants: ``smoke``, ``online`` (the last quarter of the steps
interacts with the point maze, replay seeded with the offline data). Override any field as
``key=value`` (e.g. ``agent.inv_temp=3,seed=1``).
"""

from iclr26_jax.qam.method import POINTMAZE_AGENT, experiment_config


def get_config(arg=None):
  return experiment_config(arg, {**POINTMAZE_AGENT, "agent_name": "qam", "inv_temp": 1.0, "fql_alpha": 10.0})
