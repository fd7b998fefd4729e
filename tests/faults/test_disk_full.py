"""A full disk (or no free inodes) where a run writes: one line naming what failed, nothing half
written, and the same command resumes once space is freed. The workdir lock is never left empty,
a metrics line is written whole or not at all, a checkpoint save is refused or stops the run within
a step, and a failed background save names its own step and only the checkpoints on disk.

Oracles: a real full file system (a tmpfs mounted for the test; root only, as on CI), ``ENOSPC``
raised by a patched ``os`` function at a known call, a stand-in for Orbax's manager whose
background save fails, an uninterrupted run of the same config (the resumed run must end bitwise
equal to it), and the workdir's files after each fault.
"""

import contextlib
import errno
import os
import shutil
import subprocess
import threading
import time

import pytest

from iclr26_jax.core import checkpoint as ckpt_lib
from iclr26_jax.core import workdir as workdir_lib
from tests.helpers import assert_same_state, train_toy, wide_toy_config


@contextlib.contextmanager
def _tmpfs(path, size):
  os.makedirs(path, exist_ok=True)
  r = subprocess.run(
    ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True
  )
  if r.returncode != 0:
    pytest.skip(f"cannot mount a tmpfs here (needs root): {r.stderr.decode().strip()}")
  try:
    yield path
  finally:
    subprocess.run(["umount", "-l", str(path)], check=False)


def _fill(path, leave=0):
  """Writes a file until the file system is full, then frees ``leave`` bytes; returns its path."""
  filler = os.path.join(path, "filler")
  with open(filler, "wb", buffering=0) as f, contextlib.suppress(OSError):
    while True:
      f.write(b"\0" * 4096)
  if leave:
    os.truncate(filler, max(0, os.path.getsize(filler) - leave))
  return filler


def _enospc(*args, **kwargs):
  raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


# -- the workdir lock ------------------------------------------------------------------------------


def test_lock_on_a_full_disk_is_never_empty(tmp_path):
  with _tmpfs(tmp_path / "small", "64k") as mnt:
    work = mnt / "run"
    os.makedirs(work)
    _fill(str(mnt))
    with pytest.raises(OSError, match="cannot write the workdir lock"):
      workdir_lib.WorkdirLock(str(work)).acquire()
    assert not os.path.exists(work / workdir_lib.LOCK_NAME)


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


# -- the metrics log -------------------------------------------------------------------------------


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


# -- checkpoint saves ------------------------------------------------------------------------------


def test_full_disk_stops_within_a_step_and_resumes_bitwise(tmp_path, monkeypatch):
  cfg = wide_toy_config("num_steps=12,log_every=100,eval_every=0")
  ref = train_toy(cfg, tmp_path / "ref").state
  with _tmpfs(tmp_path / "small", "4m") as mnt:
    work = mnt / "run"
    filled = {}

    def fill_after_first_save(step, state):
      del state
      if step == 8 and not filled:
        deadline = time.time() + 30
        while not os.path.exists(work / "checkpoints" / "5") and time.time() < deadline:
          time.sleep(0.05)
        filled["path"] = _fill(str(mnt))

    # The free-space check sees the full disk: the save of step 10 is refused before writing.
    with pytest.raises(
      ckpt_lib.CheckpointSaveError, match="not enough free space to save checkpoint step 10"
    ):
      train_toy(cfg, work, hooks=(fill_after_first_save,))
    assert sorted(set(os.listdir(work / "checkpoints")) - {"digests"}) == ["5"]
    # The check fooled (space used by another writer after it): the background write fails and
    # the run stops at the next step, with the temporary folder removed.
    monkeypatch.setattr(
      ckpt_lib.shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(1 << 40, 0, 1 << 40)
    )
    # 16 KiB free: config.json is rewritten at the start, the 3 x 8 KiB of arrays do not fit.
    os.remove(filled["path"])
    filled["path"] = _fill(str(mnt), leave=16 << 10)
    steps_run = []

    def slow_step_11(step, state):
      # A step longer than the failing write (here steps take microseconds): the failure is
      # complete before step 12 starts, so the run must stop before running it.
      del state
      steps_run.append(step)
      if step == 11:
        deadline = time.time() + 30
        time.sleep(0.2)
        while time.time() < deadline and any(
          "save_finalize" in t.name for t in threading.enumerate()
        ):
          time.sleep(0.05)

    with pytest.raises(ckpt_lib.CheckpointSaveError) as info:
      train_toy(cfg, work, hooks=(slow_step_11,))
    msg = str(info.value)
    assert "saving checkpoint step 10" in msg and str(work / "checkpoints") in msg
    assert "\n" not in msg.strip()
    assert max(steps_run) <= 11  # stopped within one step of the failed save
    assert sorted(set(os.listdir(work / "checkpoints")) - {"digests"}) == [
      "5"
    ]  # no temporary folder left
    monkeypatch.undo()
    os.remove(filled["path"])
    res = train_toy(cfg, work)  # space freed: the same command resumes
    assert res.resumed_from == 5
    assert_same_state(res.state, ref)


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
  # The save of step 20 fails in the background while training runs on: the error must name
  # step 20, not the next save's step 30. The next save waits for the pending one first, so the
  # failure names step 20 and step 30 is never handed to the writer.
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
