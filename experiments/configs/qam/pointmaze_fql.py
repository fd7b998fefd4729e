"""FQL baseline on the JAX point maze: one-step policy, behaviour flow as teacher.

  python -m experiments.main --config=experiments/configs/qam/pointmaze_fql.py --workdir=/tmp/pointmaze_fql
  python -m experiments.main --config=experiments/configs/qam/pointmaze_fql.py:online --workdir=...

FQL: α = 10 (distillation weight against Q maximisation), same critic machinery as QAM. Shared
settings: 2 × 256 networks, K = 2 critics, chunks of H = 5, N = 10, 2000 updates of batch 128,
evaluation on 100 episodes every 500. Variants: ``smoke``, ``online`` (the last quarter of the
steps interacts with the point maze, replay seeded with the offline data). Override any field as
``key=value`` (e.g. ``agent.inv_temp=1,seed=1``).

Shared settings, variants and overrides: ``experiments/configs/qam/__init__.py``.
"""

from experiments.configs.qam import pointmaze


def get_config(arg=None):
  return pointmaze(arg, agent_name="fql", fql_alpha=10.0)
