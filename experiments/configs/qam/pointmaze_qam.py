"""QAM on the JAX point maze (spec §13.3): noisy multimodal play data, sparse reward.

  python -m experiments.main --config=experiments/configs/qam/pointmaze_qam.py --workdir=/tmp/pointmaze_qam
  python -m experiments.main --config=experiments/configs/qam/pointmaze_qam.py:online --workdir=...

Plain QAM: the flow v_θ fine-tuned by lean adjoint matching, λ = 0.3. Shared settings: 2 × 256
networks, K = 2 critics, chunks of H = 5, N = 10, 2000 updates of batch 128, evaluation on 100
episodes every 500. Variants: ``smoke``, ``online`` (the last quarter of the steps interacts
with the point maze, replay seeded with the offline data). Override any field as ``key=value``
(e.g. ``agent.inv_temp=1,seed=1``).
"""

from iclr26_jax.qam.method import POINTMAZE_AGENT, POINTMAZE_TRAINER, experiment_config


def get_config(arg=None):
  return experiment_config(arg, {**POINTMAZE_AGENT, "agent_name": "qam", "inv_temp": 0.3},
                           trainer_fields=POINTMAZE_TRAINER)
