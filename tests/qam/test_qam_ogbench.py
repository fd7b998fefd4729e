"""OGBench data generation, loading and chunked evaluation.

Oracles: the Lights-Out rule of the puzzle (every recorded change of the button states is the
plus-shaped toggle of one button), the observation encoding (button one-hots and arm joints
inside ``observations``), the task goals of the puzzle (rewards recomputed by hand), the
environment's own ``compute_reward`` on restored recorded states, and the generator's episode
length (episode boundaries, chunk ``valid`` flags). Everything is tiny: a few short episodes.
"""

import re
import shlex
import subprocess
import sys

import gymnasium
import jax
import numpy as np
import pytest
from absl import flags

pytest.importorskip("ogbench", reason='OGBench tests need the [rl] extra: pip install -e ".[rl]"')

from iclr26_jax.qam import datasets  # noqa: E402
from iclr26_jax.qam.envs import ogbench_env as oe  # noqa: E402
from iclr26_jax.qam.envs import ogbench_generate as og  # noqa: E402
from experiments import ogbench_generate as og_cli  # noqa: E402
from tests.conftest import REPO, subprocess_env  # noqa: E402

PUZZLE = "puzzle-3x3-play-singletask-task1-v0"
PUZZLE_DATA = "puzzle-3x3-play-v0"
EPISODES, LENGTH = 3, 60
_chunks_at = jax.jit(datasets.chunks_at, static_argnums=(2, 3))
_sample_chunks = jax.jit(datasets.sample_chunks, static_argnums=(2, 3, 4))


def _plus(i, rows=3, cols=3):
  """Lights-Out toggle pattern of button i."""
  m = np.zeros(rows * cols, np.int64)
  x, y = divmod(i, cols)
  for dx, dy in ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)):
    if 0 <= x + dx < rows and 0 <= y + dy < cols:
      m[(x + dx) * cols + y + dy] = 1
  return m


@pytest.fixture(scope="module")
def puzzle(tmp_path_factory):
  """Generates the dataset with the command printed by the missing-file error (smaller sizes),
  then loads it. Returns (dir, message, env, train, val)."""
  d = str(tmp_path_factory.mktemp("ogbench"))
  with pytest.raises(FileNotFoundError) as err:
    oe.load(PUZZLE, d)
  msg = str(err.value)
  line = next(
    ln.strip() for ln in msg.splitlines() if "python -m experiments.ogbench_generate" in ln
  )
  argv = shlex.split(line)[3:]
  argv = [a for a in argv if not a.startswith(("--episodes=", "--episode_length="))]
  fv = flags.FlagValues()  # the command's own flags and main, in this process
  og_cli.define_flags(fv)
  argv = fv(["ogbench_generate"] + argv + [f"--episodes={EPISODES}", f"--episode_length={LENGTH}"])
  assert og_cli.main(argv, fv) is None  # app.run exits with main's value: None is status 0
  env, train, val = oe.load(PUZZLE, d, add_info=True)
  return d, msg, env, train, val


def test_missing_file_error_names_generator(puzzle):
  d, msg, _, _, _ = puzzle
  assert f"--env={PUZZLE_DATA}" in msg and f"--dataset_dir={d}" in msg
  with pytest.raises(ValueError, match="sparse"):
    oe.load("cube-double-play-singletask-task1-v0", d, sparse=True)
  with pytest.raises(ValueError, match="singletask"):
    oe.load(PUZZLE_DATA, d)


def test_raw_files_layout_and_lights_out(puzzle):
  d = puzzle[0]
  train_path, val_path = og.dataset_paths(PUZZLE_DATA, d)
  raw = dict(np.load(train_path))
  rows = EPISODES * (LENGTH + 1)
  assert raw["observations"].shape == (rows, 55) and raw["actions"].shape == (rows, 5)
  assert raw["qpos"].shape[0] == rows and raw["button_states"].shape == (rows, 9)
  np.testing.assert_array_equal(
    np.nonzero(raw["terminals"])[0], np.arange(1, EPISODES + 1) * (LENGTH + 1) - 1
  )
  assert np.all(np.abs(raw["actions"]) <= 1.0)
  # Alignment: qpos / button states describe the state of observations[t].
  ob, bs = raw["observations"], raw["button_states"]
  np.testing.assert_array_equal(ob[:, [19 + 4 * i + 1 for i in range(9)]].astype(np.int64), bs)
  np.testing.assert_allclose(raw["qpos"][:, :6], ob[:, :6], atol=1e-6)
  # Lights Out: within an episode each change is the toggle pattern of one button.
  same_ep = np.arange(rows - 1) % (LENGTH + 1) != LENGTH
  diffs = (bs[1:] ^ bs[:-1])[same_ep]
  changed = diffs[diffs.any(axis=1)]
  assert len(changed) >= 1, "the play oracle pressed no button"
  patterns = {tuple(_plus(i)) for i in range(9)}
  assert all(tuple(c) in patterns for c in changed)
  val = np.load(val_path)
  assert val["terminals"].sum() == 1 and val["terminals"].shape == (LENGTH + 1,)


def test_loaded_dataset_and_rewards(puzzle):
  _, _, env, train, val = puzzle
  t_len = EPISODES * LENGTH
  assert train["observations"].shape == (t_len, 55) and train["actions"].shape == (t_len, 5)
  for k in ("rewards", "masks", "terminals"):
    assert train[k].shape == (t_len,) and train[k].dtype == np.float32
  assert val["observations"].shape == (LENGTH, 55)
  assert np.all(np.abs(train["actions"]) <= 1.0 - 1e-5)
  np.testing.assert_array_equal(
    np.nonzero(train["terminals"])[0], np.arange(1, EPISODES + 1) * LENGTH - 1
  )
  inner = train["terminals"][:-1] == 0
  np.testing.assert_array_equal(
    train["next_observations"][:-1][inner], train["observations"][1:][inner]
  )
  # Rewards recomputed from the task-1 goal and the recorded button states.
  goal = np.array([[1, 1, 0], [1, 0, 1], [0, 1, 1]]).reshape(9)
  solved = (train["button_states"] == goal).sum(axis=1)
  np.testing.assert_array_equal(train["rewards"], solved - 9.0)
  np.testing.assert_array_equal(train["masks"], (solved != 9).astype(np.float32))
  assert set(np.unique(train["rewards"])) <= set(range(-9, 1))
  # The environment's own reward on a few restored recorded states.
  u = env.unwrapped
  for t in np.linspace(0, t_len - 1, 8).astype(int):
    u.set_state(
      train["qpos"][t].astype(np.float64),
      train["qvel"][t].astype(np.float64),
      train["button_states"][t],
    )
    assert u.compute_reward() == train["rewards"][t]


def test_sparse_mapping(puzzle):
  train = puzzle[3]
  hand = {
    "observations": np.zeros((4, 2)),
    "actions": np.array([[2.0], [-3.0], [0.5], [0]]),
    "rewards": np.array([-3.0, -1.0, 0.0, -2.0]),
    "masks": np.array([1, 1, 0, 1.0]),
    "terminals": np.array([0, 0, 0, 1.0]),
    "next_observations": np.zeros((4, 2)),
  }
  sp = oe.convert(hand, sparse=True)
  np.testing.assert_array_equal(sp["rewards"], [-1.0, -1.0, 0.0, -1.0])
  np.testing.assert_array_equal(sp["masks"], hand["masks"])
  np.testing.assert_allclose(sp["actions"][:, 0], [1 - 1e-5, -(1 - 1e-5), 0.5, 0.0])
  sp = oe.convert(train, sparse=True)
  np.testing.assert_array_equal(sp["rewards"], -(train["rewards"] != 0).astype(np.float32))


def test_chunk_sampling_on_loaded_data(puzzle):
  train = puzzle[3]
  h, gamma = 5, 0.9
  t_len = train["rewards"].shape[0]
  data = {
    k: train[k]
    for k in ("observations", "actions", "rewards", "masks", "terminals", "next_observations")
  }
  idx = np.arange(t_len - h + 1)
  ch = _chunks_at(data, jax.numpy.asarray(idx), h, gamma)
  same_episode = (idx // LENGTH) == ((idx + h - 1) // LENGTH)
  np.testing.assert_array_equal(np.asarray(ch["valid"]), same_episode.astype(np.float32))
  ret = sum(gamma**i * train["rewards"][idx + i] for i in range(h))
  np.testing.assert_allclose(np.asarray(ch["rewards"]), ret, rtol=1e-5)
  np.testing.assert_array_equal(
    np.asarray(ch["next_observations"]), train["next_observations"][idx + h - 1]
  )
  b = _sample_chunks(data, jax.random.PRNGKey(0), 16, h, gamma)
  assert b["actions"].shape == (16, h, 5) and b["observations"].shape == (16, 55)


class _Recorder(gymnasium.Wrapper):
  def __init__(self, env):
    super().__init__(env)
    self.actions = []

  def step(self, action):
    self.actions.append(np.array(action))
    return self.env.step(action)


def test_evaluate_chunks_open_loop(puzzle):
  env = puzzle[2]
  dims = oe.env_dims(env)
  assert dims == {"obs_dim": 55, "action_dim": 5}
  h, horizon = 3, 7
  rec = _Recorder(env)
  calls = []

  def policy(obs, key):
    assert obs.shape == (55,)
    q = len(calls)
    calls.append(np.asarray(key))
    return (0.01 * (q + 1) * np.arange(1, h * 5 + 1) / (h * 5)).astype(np.float32)

  res = oe.evaluate(rec, policy, num_episodes=2, horizon=horizon, seed=0, chunk=h)
  per_ep = -(-horizon // h)
  assert res["num_queries"] == 2 * per_ep == len(calls)
  np.testing.assert_array_equal(res["lengths"], [horizon, horizon])
  got = np.stack(rec.actions)
  for ep in range(2):
    for s in range(horizon):
      q = ep * per_ep + s // h
      want = 0.01 * (q + 1) * np.arange(1, h * 5 + 1).reshape(h, 5)[s % h] / (h * 5)
      np.testing.assert_allclose(got[ep * horizon + s], want, rtol=1e-6)
  assert len({tuple(k) for k in calls}) == len(calls)  # fresh key per query
  zero = oe.evaluate(env, lambda o, k: np.zeros(10), num_episodes=2, horizon=6, seed=1)
  assert 0.0 <= zero["success"] <= 1.0 and zero["episode_length"] == 6
  assert -9 * 6 <= zero["return"] <= 0
  with pytest.raises(ValueError, match="policy output"):
    oe.evaluate(env, lambda o, k: np.zeros(7), num_episodes=1, horizon=2)


def test_cube_double_noisy_generate_and_load(tmp_path):
  name, length = "cube-double-noisy-v0", 40
  res = og.generate_to_dir(name, str(tmp_path), num_episodes=2, episode_length=length, seed=3)
  assert res["steps"] == 3 * (length + 1) and res["steps_per_second"] > 0
  env, train, val = oe.load("cube-double-noisy-singletask-task2-v0", str(tmp_path), add_info=True)
  assert train["observations"].shape == (2 * length, oe.env_dims(env)["obs_dim"])
  assert val["rewards"].shape == (length,)
  assert set(np.unique(train["rewards"])) <= {-2.0, -1.0, 0.0}
  np.testing.assert_array_equal(train["masks"], (train["rewards"] != 0).astype(np.float32))
  u = env.unwrapped
  for t in (0, length - 1, length, 2 * length - 1):
    u.set_state(train["qpos"][t].astype(np.float64), train["qvel"][t].astype(np.float64))
    assert u.compute_reward() == train["rewards"][t]
  with pytest.raises(ValueError, match="env must look like"):
    og.parse_dataset_name("cube-double-v0")
  assert re.search(r"--env=cube-double-play-v0 ", og.generator_command("cube-double-play-v0", "D"))


def test_missing_ogbench_import_error_names_extra(tmp_path):
  code = (
    "import sys; sys.modules['ogbench'] = None\n"
    "from iclr26_jax.qam.envs import ogbench_env as oe\n"
    "try:\n"
    f"  oe.load('{PUZZLE}', {str(tmp_path)!r})\n"
    "except ImportError as e:\n"
    "  print('IMPORT-ERROR:', e)\n"
  )
  out = subprocess.run(
    [sys.executable, "-c", code],
    capture_output=True,
    text=True,
    cwd=REPO,
    env=subprocess_env(),
    timeout=120,
  )
  assert out.returncode == 0, out.stderr
  assert "IMPORT-ERROR:" in out.stdout and 'pip install -e ".[rl]"' in out.stdout


def test_rewards_are_timed_on_the_state_the_action_is_taken_in(puzzle):
  """OGBench >= 1.2 relabels single-task data from s ("pre"): the loaded environment must reward a
  step the same way, or offline rewards, online transitions and evaluation would disagree by one
  step. Checked on recorded transitions where a button press changes the reward: restored to s_t
  and stepped with a_t, the environment returns r(s_t) (the dataset's row t), not r(s_{t+1})."""
  _, _, env, train, _ = puzzle
  u = env.unwrapped
  assert u._success_timing == oe.SUCCESS_TIMING == "pre"
  assert oe.make_env(PUZZLE).unwrapped._success_timing == "pre"
  inner = np.nonzero(
    (train["terminals"][:-1] == 0) & (train["rewards"][1:] != train["rewards"][:-1])
  )[0]
  assert len(inner) >= 1, "no recorded transition changes the reward"
  reproduced = 0
  for t in inner[:4]:
    env.reset(seed=0)
    u.set_state(
      train["qpos"][t].astype(np.float64),
      train["qvel"][t].astype(np.float64),
      train["button_states"][t],
    )
    _, r, _, _, _ = env.step(train["actions"][t])
    assert r == train["rewards"][t], (t, r, train["rewards"][t], train["rewards"][t + 1])
    reproduced += u.compute_reward() == train["rewards"][t + 1]
  assert reproduced >= 1, "no press was reproduced: the check could not tell pre from post"
