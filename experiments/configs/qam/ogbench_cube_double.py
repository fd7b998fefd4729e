"""QAM on OGBench cube-double-play, the paper's settings.

  python -m experiments.ogbench_generate --env=cube-double-play-v0 --episodes=1000 \
      --episode_length=1000 --dataset_dir=~/.cache/iclr26_jax/ogbench
  python -m experiments.main --config=experiments/configs/qam/ogbench_cube_double.py --workdir=...

Nothing is downloaded: the dataset is generated locally with the scripted oracles shipped in the
``ogbench`` wheel (the ``[rl]`` extra); a missing file is an error that prints the command above.
Defaults: task 1, λ = 1 (the paper's value for QAM, QAM-E and QAM-F on this domain), default
rewards (−#unsolved cubes), chunks of H = 5, 4 x 512 networks, K = 10 critics, N = 10, 1M updates
(an accelerator job). Variants: ``fql`` (FQL baseline, α = 300), ``bc``, ``smoke`` (two generated
100-step episodes, tiny networks), ``online`` (offline-to-online as in ``ogbench_puzzle3x3.py``:
500K host MuJoCo steps after the offline updates). Other tasks:
``data.name=cube-double-play-singletask-task2-v0``.
"""

from iclr26_jax.core import config as config_lib
from iclr26_jax.qam import method


def get_config(arg=None):
  c = method.default_config()
  c.data.name = "cube-double-play-singletask-task1-v0"
  c.agent.agent_name = "qam"
  c.agent.inv_temp = 1.0  # λ
  c.num_steps = 1_000_000  # the paper's 1M offline updates,
  c.eval_every = 50_000  # 50 evaluation episodes every 50K
  c.checkpoint_every = 50_000
  c.log_every = 1000
  c.eval.episodes = 50
  return config_lib.experiment(
    c,
    arg,
    {
      "fql": {"agent.agent_name": "fql", "agent.fql_alpha": 300.0},
      "bc": {"agent.agent_name": "bc", "agent.inv_temp": 0.0},
      "online": method.online,
      "smoke": method.smoke,
    },
  )
