"""QAM offline-to-online on OGBench puzzle-3x3 (``ogbench_puzzle3x3.py:online,smoke``), killed and
resumed inside the online phase.

The smoke run: 20 updates, 12 offline then 8 online (2 collect-only), online episodes of 6 steps,
checkpoints at steps 15 and 20. Oracles: a fresh MuJoCo environment re-stepped with the buffered
actions from each episode's reset seed (observations, sparse rewards, masks, episode ends), the
parameters across the warm-up (unchanged while it lasts), and the uninterrupted run itself for the
kill-and-resume check (bitwise: parameters, optimizer state, replay buffer, environment
bookkeeping, evaluation).

The kill: each trainer run compiles the QAM update (~10 CPU-s here), so instead of a third run
killed by a hook, the uninterrupted run's workdir is copied right after update 17, once the
step-15 checkpoint is on disk: what a kill at that moment leaves behind (config, metrics, the
step-15 checkpoint), less the live run's lock file. A fresh ``QAMMethod`` (a new host
environment at episode 0's start) resumes from the copy; episode 0 is 3 steps in, so the
environment has to be rebuilt by replay before the next step.
"""

import importlib.util
import os
import shutil
import time

import jax
import numpy as np
import pytest

pytestmark = pytest.mark.slow  # two trainer runs, each compiling the QAM update (~10 CPU-s)

pytest.importorskip("ogbench", reason='OGBench tests need the [rl] extra: pip install -e ".[rl]"')

from iclr26_jax.core import trainer  # noqa: E402
from iclr26_jax.qam import method  # noqa: E402
from iclr26_jax.qam.envs import ogbench_env as oe  # noqa: E402
from tests.conftest import REPO, assert_trees_equal  # noqa: E402

OFFLINE, ONLINE, WARMUP, EP_LEN = 12, 8, 2, 6
KILL_STEP, RESUME_STEP = 17, 15  # killed after online step 5; resumes at online step 3 (t = 3)


def _config(dataset_dir):
  path = os.path.join(REPO, "experiments", "configs", "qam", "ogbench_puzzle3x3.py")
  spec = importlib.util.spec_from_file_location("qam_cfg_puzzle3x3", path)
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  return mod.get_config(
    f"online,smoke,checkpoint_every=15,eval.episodes=1,progress_bar=False,"
    f"data.dataset_dir={dataset_dir}"
  )


def _tree(x):
  return jax.tree.map(np.asarray, jax.device_get(x))


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
  cfg = _config(str(tmp_path_factory.mktemp("ogbench_data")))
  assert (
    cfg.num_steps - cfg.online.steps,
    cfg.online.steps,
    cfg.online.warmup,
    cfg.online.episode_length,
  ) == (OFFLINE, ONLINE, WARMUP, EP_LEN)
  seen = {}
  work = tmp_path_factory.mktemp("o2o")
  run, killed = work / "run", work / "killed"

  def record(step, state):
    if OFFLINE <= step <= OFFLINE + WARMUP + 1:
      seen[step] = _tree(state.params)
    if step == KILL_STEP:  # the workdir as a kill here leaves it
      final = run / "checkpoints" / str(RESUME_STEP) / "commit_success.txt"
      deadline = time.time() + 60
      while not final.exists() and time.time() < deadline:
        time.sleep(0.01)
      shutil.copytree(run, killed, ignore=shutil.ignore_patterns("run.lock"))

  m = method.QAMMethod(cfg)
  res = trainer.train(m, cfg, str(run), hooks=(record,))
  return cfg, m, res, seen, str(killed)


def test_online_transitions_replay_in_a_fresh_environment(uninterrupted):
  cfg, m, res, seen, _ = uninterrupted
  online = _tree(res.state.extras["online"])
  assert int(online.count) == ONLINE and int(online.episodes) == 1
  assert int(online.t) == ONLINE - EP_LEN
  buf = online.buffer
  np.testing.assert_array_equal(buf["terminals"], [0, 0, 0, 0, 0, 1, 0, 0])
  env = oe.make_env(cfg.data.name)
  rows = iter(range(ONLINE))
  for ep, n in ((0, EP_LEN), (1, ONLINE - EP_LEN)):
    ob, _ = env.reset(seed=m.online_env.reset_seed(ep))
    for _ in range(n):
      i = next(rows)
      np.testing.assert_array_equal(buf["observations"][i], np.asarray(ob, np.float32))
      ob, r, _, _, info = env.step(buf["actions"][i])
      np.testing.assert_array_equal(buf["next_observations"][i], np.asarray(ob, np.float32))
      assert buf["rewards"][i] == -float(r != 0) and r <= 0  # sparse puzzle reward
      assert buf["masks"][i] == 1.0 - float(info["success"])
  np.testing.assert_array_equal(online.p, np.asarray(ob, np.float32))
  # The episode in progress: its actions are kept for the replay on resume, the rest is zero.
  np.testing.assert_array_equal(online.ep_actions[: ONLINE - EP_LEN], buf["actions"][EP_LEN:])
  assert not online.ep_actions[ONLINE - EP_LEN :].any()
  assert np.all(np.abs(buf["actions"]) <= 1.0)
  # Warm-up: updates OFFLINE+1 .. OFFLINE+WARMUP only collect; the next one trains.
  for s in range(OFFLINE + 1, OFFLINE + WARMUP + 1):
    assert_trees_equal(seen[OFFLINE], seen[s])
  assert any(
    not np.array_equal(a, b)
    for a, b in zip(jax.tree.leaves(seen[OFFLINE]), jax.tree.leaves(seen[OFFLINE + WARMUP + 1]))
  )
  assert 0.0 <= res.eval_metrics["eval/success"] <= 1.0


def test_killed_in_the_online_phase_resumes_bitwise(uninterrupted):
  cfg, _, ref, _, killed = uninterrupted
  steps = [d for d in os.listdir(os.path.join(killed, "checkpoints")) if d.isdigit()]
  assert steps == [str(RESUME_STEP)]
  fresh = method.QAMMethod(cfg)  # a new host environment, at episode 0's start
  resumed = trainer.train(fresh, cfg, killed)
  assert resumed.resumed_from == RESUME_STEP
  assert fresh.online_env.rebuilds == 1  # episode 0 replayed to t = 3 before the next step
  for a, b in (
    (ref.state.params, resumed.state.params),
    (ref.state.opt_state, resumed.state.opt_state),
    (ref.state.extras, resumed.state.extras),
  ):
    assert_trees_equal(a, b)
  assert ref.eval_metrics == resumed.eval_metrics


def test_replay_that_does_not_reproduce_the_observation_stops(uninterrupted):
  cfg, m, res, _, _ = uninterrupted
  online = _tree(res.state.extras["online"])
  env = oe.OnlineEnv(cfg.data.name, int(cfg.seed), EP_LEN, sparse=True)
  t, obs = int(online.t), online.p
  wrong = online.ep_actions.copy()
  wrong[0] = -wrong[0]
  with pytest.raises(RuntimeError, match="did not reproduce"):
    env.step(1, t, np.zeros(5, np.float32), obs, wrong)
  out = env.step(1, t, np.zeros(5, np.float32), obs, online.ep_actions)
  assert env.rebuilds == 1 and out[0].shape == (55,)
