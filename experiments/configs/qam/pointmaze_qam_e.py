"""QAM-E on the JAX point maze: a tanh-Gaussian edit on top of the QAM flow (spec §9).

  python -m experiments.main --config=experiments/configs/qam/pointmaze_qam_e.py --workdir=/tmp/pointmaze_qam_e
  python -m experiments.main --config=experiments/configs/qam/pointmaze_qam_e.py:online --workdir=...

QAM-E: λ = 0.3, edit scale η = 0.1, auto-tuned entropy temperature. Shared settings: 2 × 256
networks, K = 2 critics, chunks of H = 5, N = 10, 2000 updates of batch 128, evaluation on 100
episodes every 500. Variants: ``smoke``, ``online`` (the last quarter of the steps interacts
with the point maze, replay seeded with the offline data). Override any field as ``key=value``
(e.g. ``agent.inv_temp=1,seed=1``).
"""

from iclr26_jax.qam.method import POINTMAZE_AGENT, POINTMAZE_TRAINER, experiment_config


def get_config(arg=None):
  return experiment_config(arg, {**POINTMAZE_AGENT, "agent_name": "qam", "inv_temp": 0.3,
                                 "edit_scale": 0.1},
                           trainer_fields=POINTMAZE_TRAINER)
