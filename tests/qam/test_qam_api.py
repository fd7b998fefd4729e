"""``qam.train_offline``, the entry point for a dataset of one's own (QAM, Li & Levine, ICLR 2026,
github.com/ColinQiyangLi/qam).

Known answer: a one-step contextual bandit. Context s ~ U[-1, 1]^2, actions a in [-1, 1]^2, the
best action a*(s) = (0.5 s_2, -0.5 s_1) (it depends on the context), reward
r = -10 |a - a*(s)|^2, every transition its own episode (terminals = 1, so masks = 0 and the TD
target is the reward), behaviour actions uniform on the box. QAM's policy targets the tilt
pi*(a | s) ∝ pi_beta(a | s) exp(lambda c Q(s, a)), c the reward scale ``train_offline`` applies
(``auto_reward_scale``: the rewards' span in this data, 37.4, becomes 100, c = 2.67); at the
default lambda = 0.3 that is ∝ exp(-8 |a - a*|^2) on the box, whose mean distance E|a - a*| is
computed here on a grid (the oracle, ~0.31) against the behaviour data's ~0.84. The check: the trained agent's sampled
actions close at least half of that gap (mean distance <= behaviour - 0.5 (behaviour - tilt)).
A policy that ignored the critic (the BC flow) stays at ~0.84, one that ignored the context
(a*(s) averaged out) at ~0.6.

Input checks: a misspelt config key is named with its close match; bad dtypes, shapes, missing
keys and non-finite values name the key, what it got and what it needs.
"""

import os
import signal
import threading
import time
import jax
import numpy as np
import pytest

from iclr26_jax import qam
from iclr26_jax.core import config as core_config
from iclr26_jax.qam import api

N = 4096
SCALE = 10.0
SMALL = {
  "horizon": 1,
  "num_qs": 2,
  "actor_hidden_dims": (32, 32),
  "critic_hidden_dims": (32, 32),
  "flow_steps": 5,
  "optim": {"learning_rate": 1e-3},
}


def _best(s):
  return np.stack([0.5 * s[:, 1], -0.5 * s[:, 0]], 1).astype(np.float32)


def _bandit(seed=0, n=N):
  rng = np.random.default_rng(seed)
  obs = rng.uniform(-1, 1, (n, 2)).astype(np.float32)
  act = rng.uniform(-1, 1, (n, 2)).astype(np.float32)
  rew = (-SCALE * np.sum((act - _best(obs)) ** 2, 1)).astype(np.float32)
  return {"observations": obs, "actions": act, "rewards": rew, "terminals": np.ones(n, np.float32)}


def _tilt_distance(states, lam):
  """E|a - a*(s)| under pi* ∝ exp(lam r(s, a)) on the box (uniform behaviour), on a grid;
  ``lam`` multiplies the rewards as the data holds them."""
  g = np.linspace(-1, 1, 201)
  grid = np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
  out = []
  for b in _best(states):
    d2 = np.sum((grid - b) ** 2, 1)
    p = np.exp(-lam * SCALE * (d2 - d2.min()))
    out.append(np.sum(p * np.sqrt(d2)) / np.sum(p))
  return float(np.mean(out))


@pytest.mark.slow
def test_bandit_actions_move_to_the_best_action():
  data = _bandit()
  agent = qam.train_offline(
    data, key=jax.random.key(0), num_updates=800, batch_size=128, config=SMALL, progress=False
  )
  assert agent.agent.config.inv_temp == 0.3  # the default tilt, not a test setting
  states = np.random.default_rng(1).uniform(-1, 1, (2000, 2)).astype(np.float32)
  a = np.asarray(agent.sample_actions(states, jax.random.key(1)))
  assert a.shape == (2000, 1, 2)
  dist = float(np.mean(np.linalg.norm(a[:, 0] - _best(states), axis=1)))
  behaviour = float(np.mean(np.linalg.norm(data["actions"] - _best(data["observations"]), axis=1)))
  # One-step episodes: the returns are the rewards, so c = (1 / (1 - 0.99)) / their span.
  assert agent.reward_scale == pytest.approx(100.0 / np.ptp(data["rewards"]), rel=1e-5)
  tilt = _tilt_distance(states[:200], 0.3 * agent.reward_scale)
  assert 0.8 < behaviour and tilt < 0.4  # the oracle's numbers (see the module docstring)
  assert dist <= behaviour - 0.5 * (behaviour - tilt), (dist, behaviour, tilt)
  assert len(agent.history) == 10 and agent.history[-1]["step"] == 800
  one = agent.sample_actions(states[0], jax.random.key(2))
  assert one.shape == (1, 2)


def test_misspelt_config_key_is_named():
  with pytest.raises(core_config.ConfigError, match=r"'horizn'.*did you mean 'horizon'"):
    qam.train_offline(_bandit(n=64), key=jax.random.key(0), num_updates=1, config={"horizn": 1})
  with pytest.raises(core_config.ConfigError, match=r"optim.learnig_rate.*'learning_rate'"):
    api.make_agent_config({"optim": {"learnig_rate": 1e-3}})
  with pytest.raises(core_config.ConfigError, match="num_qs"):
    api.make_agent_config({"num_qs": 0})
  with pytest.raises(core_config.ConfigError, match="critic_loop"):
    api.make_agent_config({"critic_loop": "loop"})
  c = api.make_agent_config({"optim.learning_rate": 1e-3, "horizon": 2})
  assert c.optim.learning_rate == 1e-3 and c.horizon == 2 and c.num_qs == 10
  with pytest.raises(AttributeError):
    c.new_field = 1  # locked


def _with(data, **changes):
  out = dict(data)
  for k, v in changes.items():
    if v is None:
      out.pop(k)
    else:
      out[k] = v
  return out


@pytest.mark.parametrize(
  "changes,match",
  [
    ({"actions": None}, r"'actions' missing"),
    ({"observations": np.zeros((64, 2), np.int32)}, r"'observations'.*floating dtype.*int32"),
    ({"rewards": np.zeros(64, np.int64)}, r"'rewards'.*floating.*int64"),
    ({"observations": np.zeros(64, np.float32)}, r"'observations'.*\(N, obs_dim\).*\(64,\)"),
    ({"actions": np.zeros((63, 2), np.float32)}, r"'actions'.*\(64, act_dim\).*\(63, 2\)"),
    ({"rewards": np.zeros((64, 1), np.float32)}, r"'rewards'.*\(64,\).*\(64, 1\)"),
    ({"next_observations": np.zeros((64, 3), np.float32)}, r"'next_observations'.*\(64, 2\)"),
    ({"terminals": np.full(64, 0.5, np.float32)}, r"'terminals'.*0 and 1.*0.5"),
    ({"actions": np.full((64, 2), 2.0, np.float32)}, r"'actions'.*\[-1, 1\].*max 2"),
  ],
)
def test_bad_dataset_is_named(changes, match):
  with pytest.raises(ValueError, match=match):
    qam.train_offline(_with(_bandit(n=64), **changes), key=jax.random.key(0), num_updates=1)


def test_non_finite_and_empty_and_horizon():
  data = _bandit(n=64)
  bad = data["rewards"].copy()
  bad[5] = np.nan
  with pytest.raises(ValueError, match=r"'rewards'.*finite.*row 5"):
    api.check_dataset(_with(data, rewards=bad))
  empty = {k: v[:0] for k, v in data.items()}
  with pytest.raises(ValueError, match="empty"):
    api.check_dataset(empty)
  # one-step episodes cannot make chunks of 5 (the default horizon): say so, not train on nothing
  with pytest.raises(ValueError, match="horizon = 5"):
    qam.train_offline(data, key=jax.random.key(0), num_updates=1)


def test_defaults_of_optional_keys():
  """masks = 1 - terminals; next_observations = the next row within an episode."""
  obs = np.arange(12, dtype=np.float32).reshape(6, 2)
  data = {
    "observations": obs,
    "actions": np.zeros((6, 1), np.float32),
    "rewards": np.zeros(6, np.float64),
    "terminals": np.array([0, 0, 1, 0, 0, 1], bool),
  }
  out = api.check_dataset(data, horizon=2)
  np.testing.assert_array_equal(out["masks"], [1, 1, 0, 1, 1, 0])
  np.testing.assert_array_equal(out["next_observations"], obs[[1, 2, 2, 4, 5, 5]])
  assert all(v.dtype == np.float32 for v in out.values())


def test_update_split_does_not_change_the_result():
  """Logging blocks of 7 or 2 updates (compiled in different sub-blocks): the same 7 updates."""
  data = _bandit(n=64)
  runs = [
    qam.train_offline(
      data,
      key=jax.random.key(0),
      num_updates=7,
      batch_size=16,
      config=SMALL,
      log_every=k,
      progress=False,
    )
    for k in (7, 2)
  ]
  for a, b in zip(jax.tree.leaves(runs[0].agent), jax.tree.leaves(runs[1].agent)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_a_non_finite_update_stops_training_naming_the_update():
  """Rewards scaled to 1e31: the first update's squared TD error overflows float32."""
  with pytest.raises(FloatingPointError, match=r"^QAM: \S+ is (nan|inf) at step 1 of 6 "):
    qam.train_offline(
      _bandit(n=64),
      key=jax.random.key(0),
      num_updates=6,
      batch_size=16,
      config=SMALL,
      reward_scale=1e30,
      log_every=3,
      progress=False,
    )


def test_ctrl_c_stops_training_promptly(monkeypatch):
  sent = []

  def interrupt():
    sent.append(time.time())
    os.kill(os.getpid(), signal.SIGINT)

  # The signal is sent 0.2 s after the fourth compiled call has finished: past the two compiles
  # and the two one-update probes, inside the sub-blocks of the first 1000-update logging block.
  calls = []
  wait = jax.block_until_ready

  def counting(x):
    out = wait(x)
    calls.append(1)
    if len(calls) == 4:
      threading.Timer(0.2, interrupt).start()
    return out

  monkeypatch.setattr(api.jax, "block_until_ready", counting)
  with pytest.raises(KeyboardInterrupt):
    qam.train_offline(
      _bandit(n=64),
      key=jax.random.key(0),
      num_updates=10**7,
      batch_size=16,
      config=SMALL,
      progress=False,
    )
  assert sent and time.time() - sent[0] < 10.0  # a sub-block (~0.5 s unloaded), with slack
