"""QAM on OGBench puzzle-3x3-play (sparse reward), the paper's settings.

  python -m experiments.ogbench_generate --env=puzzle-3x3-play-v0 --episodes=1000 \
      --episode_length=1000 --dataset_dir=~/.cache/iclr26_jax/ogbench
  python -m experiments.main --config=experiments/configs/qam/ogbench_puzzle3x3.py --workdir=...
  python -m experiments.main --config=experiments/configs/qam/ogbench_puzzle3x3.py:online,smoke \
      --workdir=/tmp/p3x3_o2o   # offline then online phase, tiny (tests/qam/test_qam_ogbench_online.py)

Nothing is downloaded: the dataset is generated locally with the scripted oracles shipped in the
``ogbench`` wheel (the ``[rl]`` extra); a missing file is an error that prints the command above.
Defaults: task 1, λ = 3, sparse reward r -> -1[r != 0], chunks of H = 5, 4 x 512 networks, K = 10
critics, N = 10, 1M updates (an accelerator job). Variants: ``qam_e`` (the paper's per-domain
QAM-E: λ = 1, η = 0.1), ``fql`` (FQL baseline, α = 300, same critic), ``bc``, ``smoke``
(two generated 100-step episodes, tiny networks), ``online`` (offline-to-online: 500K environment
steps after the offline updates, MuJoCo stepped on the host, one update per environment step after
a 5K-step warm-up, the replay buffer seeded with the offline data and checkpointed; a killed run
resumes bitwise by replaying the current episode, see ``iclr26_jax.qam.envs.ogbench_env.
OnlineEnv``). Other tasks: ``data.name=puzzle-3x3-play-singletask-task2-v0``.
"""

from iclr26_jax.core import config as config_lib
from iclr26_jax.qam import method


def get_config(arg=None):
  c = method.default_config()
  c.data.name = "puzzle-3x3-play-singletask-task1-v0"
  c.data.sparse = True  # r -> -1[r != 0]
  c.agent.agent_name = "qam"
  c.agent.inv_temp = 3.0  # λ
  c.num_steps = 1_000_000  # the paper's 1M offline updates,
  c.eval_every = 50_000  # 50 evaluation episodes every 50K
  c.checkpoint_every = 50_000
  c.log_every = 1000
  c.eval.episodes = 50
  return config_lib.experiment(
    c,
    arg,
    {
      "qam_e": {"agent.inv_temp": 1.0, "agent.edit_scale": 0.1},
      "fql": {"agent.agent_name": "fql", "agent.fql_alpha": 300.0},
      "bc": {"agent.agent_name": "bc", "agent.inv_temp": 0.0},
      "online": method.online,
      "smoke": method.smoke,
    },
  )
