"""A workdir holds one run: config identity on resume, the exclusive lock (a live owner stops a
second run; a dead owner's lock, and an unparsable one once old, are taken over; an unparsable
one says how to clear it), the metrics log rewritten to one line per step, and a clear fresh start
when no checkpoint can be read.

Oracles: the workdir's bytes before and after a refused resume (nothing may change), a
hand-written metrics file, and Orbax's own files (what is in ``checkpoints/`` and ``corrupt/``).
"""

import glob
import json
import os
import shutil
import subprocess

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments.configs.toy import regression
from iclr26_jax.core import checkpoint as ckpt_lib
from iclr26_jax.core import metrics as metrics_lib
from experiments import toy
from iclr26_jax.core import trainer
from iclr26_jax.core import workdir as workdir_lib
from tests.conftest import REPO, subprocess_env
from tests.helpers import snapshot

BASE = "smoke,num_steps=10,checkpoint_every=5,log_every=5,progress_bar=False,mesh.data=1"


def _cfg(extra=""):
  return regression.get_config(BASE + ("," + extra if extra else ""))


def _train(cfg, work, **kw):
  return trainer.train(toy.ToyRegression(cfg), cfg, str(work), **kw)


@pytest.fixture(scope="module")
def base_run(tmp_path_factory):
  """A finished 10-step toy run (checkpoints 5 and 10); tests work on copies of it. This
  module's own (the toy's default layers), in place of tests/faults/conftest.py's."""
  work = tmp_path_factory.mktemp("base") / "run"
  _train(_cfg(), work)
  return work


@pytest.fixture
def run_copy(base_run, tmp_path):
  work = tmp_path / "run"
  shutil.copytree(base_run, work)
  return work


def test_structural_change_stops_before_touching_anything(run_copy):
  # `mlp` gives the toy model hidden layers: a different state tree. The old behaviour declared
  # every checkpoint unreadable, moved them to corrupt/, restarted at step 0 and overwrote the
  # log and config.json.
  before = snapshot(run_copy)
  with pytest.raises(workdir_lib.ConfigChangedError) as info:
    _train(_cfg("mlp"), run_copy)
  msg = str(info.value)
  assert "toy.hidden" in msg and "different structure" in msg
  assert snapshot(run_copy) == before
  assert not os.path.exists(run_copy / "checkpoints" / "corrupt")
  # Even with the override flag a structural change is refused.
  with pytest.raises(workdir_lib.ConfigChangedError):
    _train(_cfg("mlp"), run_copy, allow_config_change=True)
  assert snapshot(run_copy) == before


def test_nonstructural_change_stops_unless_allowed_then_is_recorded(run_copy, monkeypatch):
  bars = []
  start = metrics_lib.Progress.start

  def recording_start(self, step):  # records where the trainer starts its progress display
    bars.append({"initial": step, "total": self.total})
    return start(self, step)

  monkeypatch.setattr(metrics_lib.Progress, "start", recording_start)
  before = snapshot(run_copy)
  # progress_bar is a display key: it may differ from the stored run without the flag.
  changed = _cfg("optim.learning_rate=0.5,num_steps=15,progress_bar=True")
  with pytest.raises(workdir_lib.ConfigChangedError) as info:
    _train(changed, run_copy)
  msg = str(info.value)
  assert "optim.learning_rate: 0.03 -> 0.5" in msg and "num_steps: 10 -> 15" in msg
  assert "--allow_config_change" in msg
  assert snapshot(run_copy) == before

  res = _train(changed, run_copy, allow_config_change=True)
  assert res.resumed_from == 10 and int(res.state.step) == 15
  stored = json.load(open(run_copy / "config.json"))
  assert stored["num_steps"] == 15 and stored["optim"]["learning_rate"] == 0.5
  hist = metrics_lib.read_jsonl(str(run_copy / workdir_lib.HISTORY_NAME))
  assert len(hist) == 1 and hist[0]["step"] == 10
  assert hist[0]["changes"]["num_steps"] == [10, 15]
  log = metrics_lib.read_jsonl(str(run_copy / "metrics.jsonl"))
  events = [r for r in log if r.get("event") == "config_change"]
  assert len(events) == 1 and events[0]["step"] == 10
  assert events[0]["changes"]["optim.learning_rate"] == [0.03, 0.5]
  assert "progress_bar" not in events[0]["changes"]  # a display key: history only
  assert hist[0]["changes"]["progress_bar"] == [False, True]
  assert [r["step"] for r in log if "train/loss" in r] == [5, 10, 15]
  # The bar starts after the first update (step 11) has compiled and run, so its rate and ETA
  # leave out compile time.
  assert len(bars) == 1 and bars[0]["initial"] == 11 and bars[0]["total"] == 15


def test_checkpoint_of_another_structure_is_not_moved_to_corrupt(tmp_path):
  ck = ckpt_lib.Checkpointer(str(tmp_path), keep=2)
  ck.save(1, {"w": jnp.ones((2, 3))})
  ck.wait()
  with pytest.raises(ckpt_lib.CheckpointMismatchError, match="w"):
    ck.restore({"w": jax.ShapeDtypeStruct((4, 3), jnp.float32)})
  with pytest.raises(ckpt_lib.CheckpointMismatchError, match="v only in the new state"):
    ck.restore(
      {"w": jax.ShapeDtypeStruct((2, 3), jnp.float32), "v": jax.ShapeDtypeStruct((1,), jnp.float32)}
    )
  assert ck.steps() == [1] and not os.path.exists(tmp_path / "corrupt")
  step, tree = ck.restore({"w": jax.ShapeDtypeStruct((2, 3), jnp.float32)})
  assert step == 1 and np.asarray(tree["w"]).sum() == 6
  ck.close()


def test_all_checkpoints_unreadable_says_it_starts_fresh(run_copy, capfd):
  for f in glob.glob(str(run_copy / "checkpoints" / "*" / "**" / "d" / "*"), recursive=True):
    os.remove(f)  # every array file of every checkpoint
  res = _train(_cfg(), run_copy)
  err = capfd.readouterr().err
  assert res.resumed_from is None and int(res.state.step) == 10
  assert err.count("starting fresh from step 0") == 1
  assert err.count("is unreadable") == 2
  assert "Traceback" not in err and "Event loop is closed" not in err
  assert sorted(os.listdir(run_copy / "checkpoints" / "corrupt"))  # both moved aside


def test_a_second_run_stops_at_once(run_copy, python):
  # The lock is held by this (live) process, as a concurrent run would hold it.
  before = snapshot(run_copy)
  with workdir_lib.WorkdirLock(str(run_copy)):
    with pytest.raises(workdir_lib.WorkdirBusyError, match="in use by another run"):
      _train(_cfg(), run_copy)
    proc = subprocess.run(
      [
        python,
        "-m",
        "experiments.main",
        f"--config={REPO}/experiments/configs/toy/regression.py:{BASE}",
        f"--workdir={run_copy}",
      ],
      capture_output=True,
      text=True,
      cwd=REPO,
      env=subprocess_env(XLA_FLAGS=""),
      timeout=300,
    )
  assert proc.returncode != 0
  assert f"pid {os.getpid()}" in proc.stderr and "Traceback" not in proc.stderr
  after = snapshot(run_copy)
  after.pop(".run.lock.guard", None)
  before.pop(".run.lock.guard", None)
  assert after == before
  assert not os.path.exists(run_copy / workdir_lib.LOCK_NAME)  # released on exit


def test_stale_lock_of_a_dead_process_is_taken_over(run_copy, python, capsys):
  dead = subprocess.Popen([python, "-c", "pass"])
  dead.wait()
  with open(run_copy / workdir_lib.LOCK_NAME, "w") as f:
    json.dump(
      {
        "pid": dead.pid,
        "host": __import__("socket").gethostname(),
        "proc_start": None,
        "started": "earlier",
      },
      f,
    )
  res = _train(_cfg(), run_copy)
  assert res.resumed_from == 10
  assert "stale lock" in capsys.readouterr().err
  assert not os.path.exists(run_copy / workdir_lib.LOCK_NAME)


def test_lock_of_another_host_is_not_broken(tmp_path):
  with open(tmp_path / workdir_lib.LOCK_NAME, "w") as f:
    json.dump({"pid": 1, "host": "some-other-host", "started": "earlier"}, f)
  with pytest.raises(workdir_lib.WorkdirBusyError, match="another host"):
    workdir_lib.WorkdirLock(str(tmp_path)).acquire()


def test_metrics_rewritten_on_resume_hold_each_step_once(tmp_path):
  # Two runs that wrote into one log (the interleaving of the old unlocked concurrent runs)
  # and a kill after the step-10 checkpoint.
  rows = [
    {"step": 5, "loss": 1.0},
    {"step": 5, "loss": 1.0},
    {"step": 10, "loss": 0.5},
    {"step": 10, "eval/mse": 0.4},
    {"step": 10, "loss": 0.5},
    {"step": 15, "loss": 0.2},
  ]
  with open(tmp_path / "metrics.jsonl", "w") as f:
    f.writelines(json.dumps(r) + "\n" for r in rows)
    f.write('{"step": 15, "lo')  # a line cut short by the kill
  writer = metrics_lib.MetricWriter(str(tmp_path), enabled=True)
  writer.truncate_after(10)
  assert metrics_lib.read_jsonl(str(tmp_path / "metrics.jsonl")) == [
    {"step": 5, "loss": 1.0},
    {"step": 10, "loss": 0.5},
    {"step": 10, "eval/mse": 0.4},
  ]


def test_config_changes_are_dotted():
  old = {"a": 1, "m": {"x": 1, "y": [1, 2]}, "mesh": {"data": -1}}
  new = {"a": 1, "m": {"x": 2, "y": [1, 2], "z": 0}, "mesh": {"data": 1}}
  ch = workdir_lib.config_changes(old, new)
  assert ch == {"m.x": (1, 2), "m.z": (None, 0), "mesh.data": (-1, 1)}
  assert workdir_lib.is_runtime_key("mesh.data") and not workdir_lib.is_runtime_key("m.x")


@pytest.mark.parametrize("content", [b"", b"\x00garbage", b"[1, 2]", b'{"pid": "x"}'])
def test_an_unparsable_lock_says_how_to_clear_it_and_is_taken_over_when_old(tmp_path, content):
  import time

  from iclr26_jax.core import workdir as workdir_lib

  lock = tmp_path / workdir_lib.LOCK_NAME
  lock.write_bytes(content)
  with pytest.raises(workdir_lib.WorkdirBusyError) as e:
    workdir_lib.WorkdirLock(str(tmp_path)).acquire()
  assert f"delete {lock}" in str(e.value) and "pid ?" not in str(e.value), e.value
  old = time.time() - 60
  os.utime(lock, (old, old))
  got = workdir_lib.WorkdirLock(str(tmp_path)).acquire()
  assert got.stale_owner == {}
  got.release()
  assert not lock.exists()
