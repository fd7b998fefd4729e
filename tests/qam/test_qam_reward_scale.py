"""``qam.train_offline`` at its defaults on a multi-step task with a sparse 0 / 1 reward, at any
reward scale (``reward_scale="auto"``, ``qam.auto_reward_scale``).

The task: a 1-D corridor, s in [-1, 1], action a in [-1, 1], s' = clip(s + a / 4); reaching
s' >= 0.75 gives reward 1 and ends the episode (terminal, mask 0); otherwise reward 0, and after
16 steps the episode times out (terminal, mask 1: the value beyond it is unknown, not zero).
Start states are uniform on [-1, 0.25]; the behaviour policy is a noisy drift (a ~ N(0.1, 0.6),
clipped), which reaches the goal in ~19 % of its episodes. The oracle is the data's own success
rate: the learned policy (action chunks of H = 5, re-planned every chunk) must reach the goal
more often than the behaviour did, over 500 fresh episodes.

At a reward scale of 1.0 the default tilt lambda = 0.3 is far too weak for Q-values in [0, 1]
(the policy reached 9 % after 500 updates, below the data); the auto scale rescales the returns
to span 1 / (1 - gamma) = 100 and the same run reached 32 %. The auto scale makes the rewards
the trainer sees the same for the task at x 1, x 0.01 and x 100 (checked below to float32
rounding), so the three trainings are one computation; the x 0.01 one is trained here.
"""

import jax
import numpy as np
import pytest

from iclr26_jax import qam

STEP, GOAL, T = 0.25, 0.75, 16


def _step(s, a):
  s2 = np.clip(s + STEP * np.clip(a, -1.0, 1.0), -1.0, 1.0)
  return s2, s2 >= GOAL


def _corridor(episodes=300, seed=0, mult=1.0):
  rng = np.random.default_rng(seed)
  rows = {k: [] for k in ("observations", "actions", "rewards", "terminals", "masks")}
  successes = 0
  for _ in range(episodes):
    s = rng.uniform(-1.0, 0.25)
    for t in range(T):
      a = float(np.clip(rng.normal(0.1, 0.6), -1.0, 1.0))
      s2, done = _step(s, a)
      rows["observations"].append([s])
      rows["actions"].append([a])
      rows["rewards"].append(mult * float(done))
      rows["terminals"].append(float(done or t == T - 1))
      rows["masks"].append(0.0 if done else 1.0)
      s = s2
      if done:
        successes += 1
        break
  data = {k: np.asarray(v, np.float32) for k, v in rows.items()}
  return data, successes / episodes


def _success_rate(agent, episodes=500, seed=1):
  rng = np.random.default_rng(seed)
  s = rng.uniform(-1.0, 0.25, episodes)
  done = np.zeros(episodes, bool)
  key = jax.random.key(seed)
  t = 0
  while t < T:
    key, sub = jax.random.split(key)
    chunk = np.asarray(agent.sample_actions(s[:, None].astype(np.float32), sub))
    for h in range(chunk.shape[1]):
      if t == T:
        break
      s2, reached = _step(s, chunk[:, h, 0])
      s = np.where(done, s, s2)
      done |= reached
      t += 1
  return float(done.mean())


def test_returns_to_go_and_the_auto_scale_by_hand():
  # Two episodes: a success at its 3rd step, then a time-out after 2 steps with reward 2 at the
  # cut (no bootstrap past a time-out).
  data = {
    "observations": np.zeros((5, 1), np.float32),
    "actions": np.zeros((5, 1), np.float32),
    "rewards": np.array([0, 0, 1, 0, 2], np.float32),
    "terminals": np.array([0, 0, 1, 0, 1], np.float32),
    "masks": np.array([1, 1, 0, 1, 1], np.float32),
  }
  g = qam.returns_to_go(qam.check_dataset(data), 0.9)
  np.testing.assert_allclose(g, [0.81, 0.9, 1.0, 1.8, 2.0], rtol=1e-6)
  assert qam.auto_reward_scale(data, 0.9) == pytest.approx(10.0 / (2.0 - 0.81))
  flat = dict(data, rewards=np.full(5, -1.0, np.float32), terminals=np.ones(5, np.float32))
  assert qam.auto_reward_scale(flat, 0.9) == 1.0  # equal returns: nothing to tilt by
  with pytest.raises(ValueError, match="reward_scale must be 'auto' or a positive number"):
    qam.train_offline(
      data, key=jax.random.key(0), num_updates=1, config={"horizon": 1}, reward_scale=0.0
    )


def test_the_trainer_sees_the_same_rewards_at_any_scale():
  base, _ = _corridor()
  want = base["rewards"] * qam.auto_reward_scale(base)
  for mult in (0.01, 100.0):
    data, _ = _corridor(mult=mult)
    np.testing.assert_allclose(data["rewards"] * qam.auto_reward_scale(data), want, rtol=1e-5)


@pytest.mark.slow
def test_sparse_rewards_x001_beat_the_data_at_the_defaults():
  data, behaviour = _corridor(mult=0.01)
  assert 0.1 < behaviour < 0.3  # the task's premise (see the module docstring)
  agent = qam.train_offline(
    data, key=jax.random.key(0), num_updates=600, config=qam.CPU_CONFIG, progress=False
  )
  assert agent.agent.config.inv_temp == 0.3 and agent.reward_scale == pytest.approx(1e4, rel=0.05)
  rate = _success_rate(agent)
  assert rate > behaviour + 0.05, (rate, behaviour)
