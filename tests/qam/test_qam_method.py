"""QAM through the shared trainer (``qam.method.QAMMethod``): offline then online phase.

Oracles: the point-maze dynamics (every buffered transition is re-stepped through
``pointmaze.step``), the parameters before the online warm-up (unchanged while it lasts), and an
uninterrupted run of the same config for the kill-and-resume check (bitwise, killed inside the
online phase so the environment state and the replay buffer come back from the checkpoint).
"""

import importlib.util
import os

import jax
import numpy as np
import pytest

from iclr26_jax.core import trainer
from iclr26_jax.qam import method
from iclr26_jax.qam.envs import pointmaze as pm
from tests.conftest import REPO, Kill, assert_trees_equal, kill_at

# 16 steps: 6 offline, 10 online of which 3 collect only; checkpoints every 4 steps.
ARG = (
  "smoke,online,num_steps=16,online.steps=10,online.warmup=3,checkpoint_every=4,"
  "log_every=4,eval_every=0,batch_size=16,progress_bar=False"
)
OFFLINE, WARMUP, KILL_STEP = 6, 3, 10


def _config(arg=ARG):
  path = os.path.join(REPO, "experiments", "configs", "qam", "pointmaze_qam.py")
  spec = importlib.util.spec_from_file_location("qam_cfg_pointmaze", path)
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  return mod.get_config(arg)


def _tree(x):
  return jax.tree.map(np.asarray, jax.device_get(x))


@pytest.fixture(scope="module")
def online_run(tmp_path_factory):
  cfg = _config()
  seen = {}

  def record(step, state):
    if OFFLINE <= step <= OFFLINE + WARMUP + 1:
      seen[step] = _tree(state.params)

  res = trainer.train(
    method.QAMMethod(cfg), cfg, str(tmp_path_factory.mktemp("qam") / "run"), hooks=(record,)
  )
  return cfg, res, seen


def test_online_buffer_replays_through_the_environment(online_run):
  _, res, _ = online_run
  online = _tree(res.state.extras["online"])
  n = int(online.count)
  assert n == 10
  buf = {k: v[:n] for k, v in online.buffer.items()}
  p_next, r, m = jax.device_get(pm.step(buf["observations"], buf["actions"]))
  # Same arithmetic, compiled in another program: equal up to float32 contraction (~1 ulp).
  np.testing.assert_allclose(np.asarray(p_next), buf["next_observations"], rtol=0, atol=1e-6)
  np.testing.assert_array_equal(np.asarray(r), buf["rewards"])
  np.testing.assert_array_equal(np.asarray(m), buf["masks"])
  assert np.all(np.abs(buf["actions"]) <= 1.0)
  # Episodes continue where they left off unless the transition ended one (goal or time limit).
  for i in range(n - 1):
    if buf["terminals"][i] == 0:
      np.testing.assert_array_equal(buf["observations"][i + 1], buf["next_observations"][i])
  # The first online observation is a start state of the maze.
  assert np.all(np.abs(buf["observations"][0] - np.asarray(pm.START)) <= pm.START_NOISE)
  assert np.array_equal(buf["terminals"], (buf["masks"] == 0).astype(np.float32))


def test_warmup_collects_without_updating(online_run):
  _, _, seen = online_run
  # Hook step s sees the state after update s. Updates OFFLINE+1 .. OFFLINE+WARMUP are the
  # collect-only ones (state.step OFFLINE .. OFFLINE+WARMUP-1 when they start).
  base = seen[OFFLINE]
  for s in range(OFFLINE + 1, OFFLINE + WARMUP + 1):
    for a, b in zip(jax.tree.leaves(base), jax.tree.leaves(seen[s])):
      np.testing.assert_array_equal(a, b)
  moved = [
    not np.array_equal(a, b)
    for a, b in zip(jax.tree.leaves(base), jax.tree.leaves(seen[OFFLINE + WARMUP + 1]))
  ]
  assert any(moved)


def test_resume_inside_the_online_phase_is_bitwise_exact(online_run, tmp_path):
  cfg, ref, _ = online_run
  work = str(tmp_path / "killed")
  with pytest.raises(Kill):
    trainer.train(method.QAMMethod(cfg), cfg, work, hooks=(kill_at(KILL_STEP),))
  resumed = trainer.train(method.QAMMethod(cfg), cfg, work)
  assert resumed.resumed_from == 8  # online step 2, still inside the warm-up
  for a, b in (
    (ref.state.params, resumed.state.params),
    (ref.state.opt_state, resumed.state.opt_state),
    (ref.state.extras, resumed.state.extras),
  ):
    assert_trees_equal(a, b)
  assert ref.eval_metrics == resumed.eval_metrics


def test_bad_run_settings_name_the_field():
  with pytest.raises(ValueError, match="online.steps"):
    method.validate(_config("smoke,online.steps=20"))
  with pytest.raises(ValueError, match="online.warmup"):
    method.validate(_config("smoke,online,online.warmup=9"))
  with pytest.raises(ValueError, match="online.episode_length"):
    method.validate(_config("smoke,online,online.episode_length=-1"))
