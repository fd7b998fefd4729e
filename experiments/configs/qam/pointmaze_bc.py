"""BC-flow baseline on the JAX point maze (spec §10): QAM with λ = 0, actions from v_β.

  python -m experiments.main --config=experiments/configs/qam/pointmaze_bc.py --workdir=/tmp/pointmaze_bc
  python -m experiments.main --config=experiments/configs/qam/pointmaze_bc.py:online --workdir=...

BC flow: the behaviour flow alone; the critic is trained for diagnostics only. Shared settings:
2 × 256 networks, K = 2 critics, chunks of H = 5, N = 10, 2000 updates of batch 128, evaluation
on 100 episodes every 500. Variants: ``smoke``, ``online`` (the last quarter of the steps
interacts with the point maze, replay seeded with the offline data). Override any field as
``key=value`` (e.g. ``agent.inv_temp=1,seed=1``).
"""

from iclr26_jax.qam.method import POINTMAZE_AGENT, POINTMAZE_TRAINER, experiment_config


def get_config(arg=None):
  return experiment_config(arg, {**POINTMAZE_AGENT, "agent_name": "bc", "inv_temp": 0.0},
                           trainer_fields=POINTMAZE_TRAINER)
