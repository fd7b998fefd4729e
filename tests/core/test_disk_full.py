"""Reliability, third round (#39): faults a fault injector found that one line, a fallback or a
refusal now handle.

Oracles: an uninterrupted run of the same config (a resumed run must end bitwise equal to it), the
workdir's files before and after (nothing half written, nothing left behind), and the exact
errors injected (``ENOSPC`` / ``EDQUOT`` raised by a patched ``os`` function, bytes flipped in a
known file, a signal sent at a known moment).
"""

import errno
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from experiments import ckpt as ckpt_tool
from iclr26_jax.core import checkpoint as ckpt_lib
from iclr26_jax.core import datacheck
from tests.conftest import REPO, subprocess_env
from tests.core.test_integrity import _assert_same_state, _cfg, _flip_leaf_bytes, _train


def _main(*args, timeout=300, **popen):
  return subprocess.run(
    [sys.executable, "-m", "experiments.main", *args],
    capture_output=True,
    text=True,
    cwd=REPO,
    env=subprocess_env(XLA_FLAGS=""),
    timeout=timeout,
    **popen,
  )


def _lines(stderr: str) -> list[str]:
  """stderr without absl's own log lines (none are expected; kept to see them on failure)."""
  return [ln for ln in stderr.splitlines() if ln.strip()]


# -- 1. no single fault switches verification off ----------------------------------------------


@pytest.fixture(scope="module")
def base_run(tmp_path_factory):
  """An uninterrupted 10-step toy run (checkpoints 5 and 10): the oracle for every resume."""
  work = tmp_path_factory.mktemp("base") / "run"
  res = _train(_cfg(), work)
  return work, res.state


@pytest.fixture
def run_copy(base_run, tmp_path):
  work = tmp_path / "run"
  shutil.copytree(base_run[0], work)
  return work


def test_a_deleted_step_metadata_does_not_switch_the_digest_off(base_run, run_copy, capfd):
  # The probe: the step's own metadata (which held the only digest) deleted and a data byte
  # flipped; before, this read as "written before digests" and resumed from step 10, exit 0.
  os.remove(run_copy / "checkpoints" / "10" / "_CHECKPOINT_METADATA")
  _flip_leaf_bytes(run_copy, 10)
  lines, ok = ckpt_tool.inspect(str(run_copy))
  assert not ok, lines
  assert any("step 10" in ln and "DAMAGED" in ln and "Dense_0/kernel" in ln for ln in lines), lines
  capfd.readouterr()
  res = _train(_cfg(), run_copy)
  err = capfd.readouterr().err
  assert res.resumed_from == 5 and int(res.state.step) == 10
  assert err.count("WARNING") == 1 and "checkpoint step 10" in err and "is damaged" in err, err
  assert "Traceback" not in err and "Metadata file does not exist" not in err, err
  _assert_same_state(res.state, base_run[1])


def test_a_lost_digest_in_one_place_still_verifies_in_the_other(run_copy):
  os.remove(run_copy / "checkpoints" / "10" / "_CHECKPOINT_METADATA")
  lines, ok = ckpt_tool.inspect(str(run_copy))
  assert ok and any("step 10" in ln and "digest ok" in ln for ln in lines), lines
  res = _train(_cfg(), run_copy)
  assert res.resumed_from == 10


@pytest.mark.parametrize("damage", ["delete", "garbage"])
def test_no_readable_digest_in_a_digest_workdir_is_damage(base_run, run_copy, capfd, damage):
  meta = run_copy / "checkpoints" / "10" / "_CHECKPOINT_METADATA"
  side = run_copy / "checkpoints" / ckpt_lib.DIGEST_DIR / "10.json"
  for f in (meta, side):
    if damage == "delete":
      os.remove(f)
    else:
      f.write_bytes(b"\x00garbage{")
  # The inspector: DAMAGED, so its exit status is 1 (before: "no digest", exit 0).
  lines, ok = ckpt_tool.inspect(str(run_copy))
  assert not ok and any("step 10" in ln and "DAMAGED: no readable digest" in ln for ln in lines)
  capfd.readouterr()
  res = _train(_cfg(), run_copy)
  err = capfd.readouterr().err
  assert res.resumed_from == 5 and err.count("WARNING") == 1 and "no readable digest" in err, err
  _assert_same_state(res.state, base_run[1])


def test_old_checkpoints_without_any_digest_still_restore(tmp_path):
  import jax.numpy as jnp

  ck = ckpt_lib.Checkpointer(str(tmp_path), async_save=False)
  tree = {"w": jnp.arange(4.0)}
  ck.save(1, tree)
  ck.close()
  # What a directory written before digests looks like: no digest anywhere.
  shutil.rmtree(tmp_path / ckpt_lib.DIGEST_DIR)
  meta = tmp_path / "1" / "_CHECKPOINT_METADATA"
  import json

  rec = json.loads(meta.read_text())
  rec["custom_metadata"] = {}
  meta.write_text(json.dumps(rec))
  ck = ckpt_lib.Checkpointer(str(tmp_path), async_save=False)
  assert not ck.writes_digests()
  step, got = ck.restore(tree)
  assert step == 1 and np.array_equal(np.asarray(got["w"]), np.arange(4.0))
  ck.close()


def test_moved_unreadable_step_is_not_called_nothing_moved(run_copy):
  # Newest digest-damaged, older truncated: the older one is moved aside (unreadable) and the
  # error must say so instead of "Nothing was moved".
  _flip_leaf_bytes(run_copy, 10)
  for f in (run_copy / "checkpoints" / "5" / "default").rglob("manifest.ocdbt"):
    f.write_bytes(f.read_bytes()[:10])
  with pytest.raises(ckpt_lib.CheckpointCorruptError) as info:
    _train(_cfg(), run_copy)
  msg = str(info.value)
  assert "Nothing was moved" not in msg and "[5] were moved to corrupt/" in msg, msg
  assert os.path.isdir(run_copy / "checkpoints" / "10")


# -- 2. data loaders check dtype, widths, rows, keys; a garbage file is one line ----------------

PUZZLE = "puzzle-3x3-play-singletask-task1-v0"


def _ogbench_files(folder, mode="ok"):
  """Tiny ``puzzle-3x3-play-v0{,-val}.npz`` (2 episodes of 20 rows), damaged as ``mode``."""
  from iclr26_jax.qam.envs import ogbench_generate as og

  paths = og.dataset_paths("puzzle-3x3-play-v0", str(folder))
  os.makedirs(folder, exist_ok=True)
  for path in paths:
    rng = np.random.default_rng(0)
    n = 40
    d = {
      "observations": rng.standard_normal((n, 55)).astype(np.float32),
      "actions": rng.uniform(-1, 1, (n, 5)).astype(np.float32),
      "terminals": (np.arange(n) % 20 == 19).astype(np.float32),
      "button_states": np.zeros((n, 9), np.int64),
      "qpos": np.zeros((n, 30), np.float32),
      "qvel": np.zeros((n, 30), np.float32),
    }
    if mode == "int32":
      d["observations"] = (d["observations"] * 5).astype(np.int32)
    elif mode == "width":
      d["observations"] = d["observations"][:, :54]
    elif mode == "cut":
      d = {k: v[:33] for k, v in d.items()}
    elif mode == "empty":
      d = {k: v[:0] for k, v in d.items()}
    elif mode == "nokey":
      del d["actions"]
    elif mode == "rows":
      d["actions"] = d["actions"][:-20]
    elif mode == "buttons8":
      d["button_states"] = d["button_states"][:, :8]
    np.savez_compressed(path, **d)
    if mode == "garbage":
      with open(path, "wb") as f:
        f.write(b"\x00not an archive" * 50)
  return paths


@pytest.mark.parametrize(
  "mode,expected",
  [
    ("int32", "['observations']: expected floating values; got dtype int32"),
    (
      "cut",
      "['terminals']: the last row is not an episode's end (the file was cut short, 33 rows)",
    ),
    ("empty", "['observations']: expected at least 2 row(s); got shape (0, 55) (empty)"),
    ("nokey", ": missing required array(s) ['actions']"),
    ("rows", ": arrays must have the same number of rows"),
    ("garbage", ": cannot be read as a .npz archive"),
  ],
)
def test_ogbench_files_are_checked_at_load(tmp_path, mode, expected):
  from iclr26_jax.qam.envs import ogbench_env as oe

  paths = _ogbench_files(tmp_path, mode)
  with pytest.raises(datacheck.DataError) as e:
    oe.check_files(paths, "puzzle-3x3")
  assert str(e.value).startswith(paths[0]) and expected in str(e.value), e.value
  assert "\n" not in str(e.value)


def test_ogbench_width_is_checked_against_the_environment_at_load(tmp_path):
  pytest.importorskip("ogbench", reason='OGBench tests need the [rl] extra: pip install -e ".[rl]"')
  from iclr26_jax.qam.envs import ogbench_env as oe

  paths = _ogbench_files(tmp_path, "width")
  with pytest.raises(datacheck.DataError) as e:
    oe.load(PUZZLE, str(tmp_path))
  assert str(e.value) == (
    f"{paths[0]}['observations']: expected 55 columns (the observation size of {PUZZLE}); got 54: "
    "the file was written for another environment"
  )


@pytest.mark.parametrize(
  "mode,expected",
  [
    (
      "int32",
      "['observations']: expected floating values; got dtype int32 (a cast would truncate or "
      "change the values)",
    ),
    ("buttons8", "['button_states']: expected 9 columns (the buttons of puzzle-3x3); got 8"),
  ],
)
def test_a_bad_data_file_stops_main_in_one_line_with_no_workdir(tmp_path, mode, expected):
  # No traceback (OGBench's relabelling used to fail deep inside on 8 button columns).
  pytest.importorskip("ogbench", reason='OGBench tests need the [rl] extra: pip install -e ".[rl]"')
  paths = _ogbench_files(tmp_path / "data", mode)
  work = tmp_path / "w"
  out = _main(
    "--config=experiments/configs/qam/ogbench_puzzle3x3.py:smoke,data.generate_episodes=0,"
    f"data.dataset_dir={tmp_path / 'data'}",
    f"--workdir={work}",
  )
  assert out.returncode == 1, out.stderr[-3000:]
  lines = [ln for ln in _lines(out.stderr) if "GLFW" not in ln and "DISPLAY" not in ln]
  assert len(lines) == 1 and lines[0].startswith(f"error: {paths[0]}"), out.stderr
  assert expected in lines[0], lines[0]
  assert not work.exists()


def test_minpv_uci_integer_file_is_refused(tmp_path):
  from iclr26_jax.minpv import data as minpv_data

  f = tmp_path / "uci.npz"
  np.savez(f, train=np.arange(40, dtype=np.int32).reshape(20, 2), test=np.zeros((5, 2)))
  with pytest.raises(datacheck.DataError, match=r"uci.npz\['train'\]: expected floating values"):
    minpv_data.load_uci(str(f))
  f.write_bytes(b"garbage")
  with pytest.raises(datacheck.DataError, match="cannot be read as a .npz archive"):
    minpv_data.load_uci(str(f))


# -- 4. one line, nothing half written: full disks, a step too large for memory -----------------


def _enospc(*args, **kwargs):
  raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("where", ["makedirs", "fsync"])
def test_lock_on_a_full_disk_or_no_inodes_is_one_line(tmp_path, monkeypatch, where):
  from iclr26_jax.core import workdir as workdir_lib

  work = tmp_path / "w"
  if where == "fsync":
    work.mkdir()
  monkeypatch.setattr(workdir_lib.os, where, _enospc)
  with pytest.raises(workdir_lib.WorkdirWriteError) as e:
    workdir_lib.WorkdirLock(str(work)).acquire()
  monkeypatch.undo()
  msg = str(e.value)
  assert "\n" not in msg and "No space left on device" in msg and str(work) in msg, msg
  assert not (work / workdir_lib.LOCK_NAME).exists()


def test_a_metrics_line_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
  from iclr26_jax.core import metrics as metrics_lib

  w = metrics_lib.MetricWriter(str(tmp_path), enabled=True, echo=False)
  w.write(1, {"loss": 1.0})
  before = (tmp_path / "metrics.jsonl").read_bytes()
  real_write = os.write

  def half_then_full(fd, data):
    if len(data) > 4:
      return real_write(fd, data[: len(data) // 2])  # the disk fills mid-line
    _enospc()

  monkeypatch.setattr(metrics_lib.os, "write", half_then_full)
  with pytest.raises(metrics_lib.MetricsWriteError) as e:
    w.write(2, {"loss": 2.0})
  monkeypatch.undo()
  assert "step 2" in str(e.value) and "\n" not in str(e.value)
  assert (tmp_path / "metrics.jsonl").read_bytes() == before  # no half line left
  w.write(3, {"loss": 3.0})
  assert [r["step"] for r in metrics_lib.read_jsonl(str(tmp_path / "metrics.jsonl"))] == [1, 3]


def test_a_batch_too_large_for_memory_is_one_line_and_leaves_no_workdir(tmp_path):
  from iclr26_jax.core import trainer

  work = tmp_path / "w"
  cfg = _cfg(f"batch_size={10**12}")
  with pytest.raises(trainer.StepMemoryError) as e:
    _train(cfg, work)
  msg = str(e.value)
  assert "batch_size=1000000000000" in msg and "nothing was trained" in msg and "\n" not in msg
  assert not work.exists()


class _SlowFailingManager:
  """Stands in for Orbax's manager: a background save that is still writing when the next one
  is asked for, and that then fails (what ``inodes exhausted during a background save`` did)."""

  def __init__(self):
    self.saved = []

  def save(self, step, **kwargs):
    del kwargs
    self.saved.append(step)

  def check_for_errors(self):
    pass

  def is_saving_in_progress(self):
    return True

  def wait_until_finished(self):
    raise OSError(errno.ENOSPC, "No space left on device")

  def all_steps(self):
    return []

  def close(self):
    pass


def test_a_failed_background_save_is_named_with_its_own_step(tmp_path):
  # Item 4 / 6: the save of step 20 failed while training ran on, and the error named step 30.
  # Now the next save waits for the pending one first, so the failure names step 20 and step 30
  # is never handed to the writer.
  import jax.numpy as jnp

  ck = ckpt_lib.Checkpointer(str(tmp_path), async_save=True)
  ck._mgr.close()
  ck._mgr = _SlowFailingManager()
  ck.save(20, {"w": jnp.arange(4.0)})
  with pytest.raises(ckpt_lib.CheckpointSaveError, match="saving checkpoint step 20 ") as info:
    ck.save(30, {"w": jnp.arange(4.0)})
  assert "\n" not in str(info.value) and "No space left" in str(info.value)
  assert str(info.value).endswith("; no checkpoint was saved before it")
  assert ck._mgr.saved == [20]


def test_a_failed_save_names_only_the_steps_on_disk(tmp_path):
  # The manager still lists the failed step 20 (the first save's "intact (steps [10])" named the
  # step that failed); only step 10 has its folder on disk.
  import jax.numpy as jnp

  ck = ckpt_lib.Checkpointer(str(tmp_path), async_save=True)
  ck._mgr.close()
  ck._mgr = _SlowFailingManager()
  ck._mgr.all_steps = lambda: [10, 20]
  os.makedirs(tmp_path / "10")
  ck.save(20, {"w": jnp.arange(4.0)})
  with pytest.raises(ckpt_lib.CheckpointSaveError, match="saving checkpoint step 20 ") as info:
    ck.wait()
  assert str(info.value).endswith("; the checkpoints saved before are intact (steps [10])")


def test_remove_temporary_counts_only_folders_that_are_gone(tmp_path, monkeypatch):
  # Item 6: two SIGINTs reported "removed 1 temporary folder" while it was still on disk (a writer
  # still running refilled it). Only folders that no longer exist are reported.
  ck = ckpt_lib.Checkpointer(str(tmp_path), async_save=False)
  tmp = tmp_path / ("7" + ckpt_lib._TMP_MARK + "-123")
  os.makedirs(tmp / "default")
  monkeypatch.setattr(ckpt_lib.shutil, "rmtree", lambda path, ignore_errors=False: None)
  assert ck.remove_temporary() == [] and tmp.is_dir()
  monkeypatch.undo()
  assert ck.remove_temporary() == [str(tmp)] and not tmp.exists()
  ck.close()


# -- 5. signals outside the loop ---------------------------------------------------------------


def test_sigint_during_start_up_is_one_line_and_writes_nothing(tmp_path):
  import signal
  import time

  work = tmp_path / "w"
  proc = subprocess.Popen(
    [
      sys.executable,
      "-m",
      "experiments.main",
      "--config=experiments/configs/toy/regression.py:smoke,progress_bar=False",
      f"--workdir={work}",
    ],
    cwd=REPO,
    env=subprocess_env(XLA_FLAGS=""),
    stderr=subprocess.PIPE,
    text=True,
  )
  time.sleep(1.0)  # imports: before, this was a KeyboardInterrupt traceback or lost
  proc.send_signal(signal.SIGINT)
  _, err = proc.communicate(timeout=120)
  assert proc.returncode == 0, err
  assert _lines(err) == [
    "SIGINT received during start-up: stopped before anything was written; run the same "
    "command to start"
  ], err
  assert not work.exists()


def test_signal_while_the_run_starts_releases_the_lock_and_resumes(base_run, run_copy):
  import signal

  from iclr26_jax.core import interrupt, toy
  from iclr26_jax.core import workdir as workdir_lib

  class SignalledDuringDataLoad(toy.ToyRegression):
    def device_data(self):
      os.kill(os.getpid(), signal.SIGTERM)  # as a scheduler would, while the data loads
      return super().device_data()

  previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
  shutil.rmtree(run_copy / "checkpoints" / "10")  # resume from 5: the loop has work to do
  interrupt.install()
  try:
    cfg = _cfg()
    with pytest.raises(interrupt.Interrupted) as e:
      from iclr26_jax.core import trainer

      trainer.train(SignalledDuringDataLoad(cfg), cfg, str(run_copy))
  finally:
    for s, h in previous.items():
      signal.signal(s, h)
    interrupt._state.update(installed=False, phase="start", received=None)
  assert e.value.signal_name == "SIGTERM"
  assert not (run_copy / workdir_lib.LOCK_NAME).exists()  # no stale lock
  res = _train(_cfg(), run_copy)  # the same command resumes
  assert res.resumed_from == 5
  _assert_same_state(res.state, base_run[1])


# -- 6. an unparsable lock says how to clear it --------------------------------------------------


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
