"""QAM on the JAX point maze (spec §13.3): noisy multimodal play data, sparse reward.

  python -m experiments.main --config=experiments/configs/qam/pointmaze_qam.py --workdir=/tmp/qam_pointmaze_qam
  python -m experiments.main --config=experiments/configs/qam/pointmaze_qam.py:online --workdir=...

Plain QAM: the flow v_θ fine-tuned by lean adjoint matching, λ = 1, 3 × 256 networks, K = 2 critics, chunks of H = 5, N = 10. Variants: ``smoke``, ``online`` (the last quarter of the steps
interacts with the point maze, replay seeded with the offline data). Override any field as
``key=value`` (e.g. ``agent.inv_temp=3,seed=1``).
"""

from iclr26_jax.qam.method import POINTMAZE_AGENT, experiment_config


def get_config(arg=None):
  return experiment_config(arg, {**POINTMAZE_AGENT, "agent_name": "qam", "inv_temp": 1.0})
