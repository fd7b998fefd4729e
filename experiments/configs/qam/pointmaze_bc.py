"""BC-flow baseline on the JAX point maze (spec §10): QAM with λ = 0, actions from v_β.

  python -m experiments.main --config=experiments/configs/qam/pointmaze_bc.py --workdir=/tmp/qam_pointmaze_bc
  python -m experiments.main --config=experiments/configs/qam/pointmaze_bc.py:online --workdir=...

BC flow: the behaviour flow alone; the critic is trained for diagnostics only. Variants: ``smoke``, ``online`` (the last quarter of the steps
interacts with the point maze, replay seeded with the offline data). Override any field as
``key=value`` (e.g. ``agent.inv_temp=3,seed=1``).
"""

from iclr26_jax.qam.method import POINTMAZE_AGENT, experiment_config


def get_config(arg=None):
  return experiment_config(arg, {**POINTMAZE_AGENT, "agent_name": "bc", "inv_temp": 0.0})
