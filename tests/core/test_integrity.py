"""Runs that cannot be corrupted silently (#31): checkpoint digests, failed saves, the lock on a
full disk, a missing config.json, a divergence right after a restore, and the inspect tool.

Oracles: an uninterrupted run of the same config (resumed runs must end bitwise equal to it),
the workdir's bytes before and after a refused resume (nothing may change), the exact bytes of a
leaf planted in the checkpoint's data files (so the damage is known to hit array data), and a real
full file system (a tmpfs mounted for the test; root only, as on CI).
"""

import contextlib
import glob
import os
import shutil
import subprocess
import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments import ckpt as ckpt_tool
from experiments.configs.toy import regression
from iclr26_jax.core import checkpoint as ckpt_lib
from iclr26_jax.core import sharding as shd
from iclr26_jax.core import toy, trainer
from iclr26_jax.core import workdir as workdir_lib
from tests.conftest import need_devices
from tests.core.test_workdir import _snapshot

BASE = "smoke,num_steps=10,checkpoint_every=5,log_every=5,progress_bar=False,mesh.data=1"


def _cfg(extra=""):
  cfg = regression.get_config(BASE + ("," + extra if extra else ""))
  # One 8 x 256 hidden layer: Orbax (OCDBT) stores a value this large in a data file of its own
  # with no checksum, where flipped bytes restore silently without a digest (values of a few
  # hundred bytes sit in checksummed index nodes and fail to read instead).
  cfg.toy.hidden = (256,)
  return cfg


def _train(cfg, work, **kw):
  return trainer.train(toy.ToyRegression(cfg), cfg, str(work), **kw)


def _assert_same_state(a, b):
  ja = jax.tree.leaves(jax.tree.map(np.asarray, a.arrays()))
  jb = jax.tree.leaves(jax.tree.map(np.asarray, b.arrays()))
  assert len(ja) == len(jb)
  for x, y in zip(ja, jb):
    assert x.dtype == y.dtype and x.tobytes() == y.tobytes()


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


def _flip_leaf_bytes(work, step):
  """Flips 8 bytes in the middle of the largest data file of checkpoint ``step``: the kernel's
  values (the file is a zstd frame of them; zstd keeps no checksum and OCDBT none for a value
  stored in a file of its own, so without a digest this restores silently as wrong numbers).
  ``test_flipped_newest...`` checks the restore reports a digest mismatch, not a read error."""
  files = glob.glob(str(work / "checkpoints" / str(step) / "**" / "d" / "*"), recursive=True)
  f = max(files, key=os.path.getsize)
  data = bytearray(open(f, "rb").read())
  assert len(data) > 4096, f"{f}: {len(data)} bytes; the kernel is stored elsewhere"
  mid = len(data) // 2
  for i in range(mid, mid + 8):
    data[i] ^= 0x5A
  open(f, "wb").write(bytes(data))


def test_digest_is_sharding_invariant_and_sees_one_flipped_bit():
  devs = need_devices(4)
  x = jax.random.normal(jax.random.PRNGKey(0), (16, 8))
  extra = {
    "h": jnp.arange(6, dtype=jnp.bfloat16),
    "k": jax.random.key(1),
    "m": jnp.array([True, False]),
  }
  on4 = {
    "x": jax.device_put(
      x, jax.sharding.NamedSharding(shd.make_mesh({"data": 4}, devs), jax.P("data"))
    ),
    **extra,
  }
  on1 = {"x": x, **extra}
  d4, d1 = ckpt_lib.tree_digest(on4), ckpt_lib.tree_digest(on1)
  assert d4 == d1 and set(d1) == {"x", "h", "k", "m"}
  # The sign bit of one element: the first sum's multipliers are odd, so it must change.
  bits = np.asarray(x).view(np.uint32).copy()
  bits[3, 5] ^= np.uint32(1 << 31)
  flipped = dict(on1, x=jnp.asarray(bits.view(np.float32)))
  df = ckpt_lib.tree_digest(flipped)
  assert df["x"][0] != d1["x"][0] and df["x"][1] != d1["x"][1]
  assert {k: v for k, v in df.items() if k != "x"} == {k: v for k, v in d1.items() if k != "x"}
  # Swapping two elements keeps the plain sum but not the position-weighted ones.
  swapped = np.asarray(x).copy()
  swapped[[0, 1]] = swapped[[1, 0]]
  assert ckpt_lib.tree_digest({"x": jnp.asarray(swapped)})["x"] != d1["x"]


def test_flipped_newest_checkpoint_falls_back_and_ends_bitwise_equal(base_run, run_copy, capfd):
  _flip_leaf_bytes(run_copy, 10)
  lines, ok = ckpt_tool.inspect(str(run_copy))
  assert not ok
  assert any("step 10" in ln and "DAMAGED: " in ln and "Dense_0/kernel" in ln for ln in lines), (
    lines
  )
  assert any("step 5" in ln and "digest ok" in ln for ln in lines)
  res = _train(_cfg(), run_copy)  # the same command again
  err = capfd.readouterr().err
  assert res.resumed_from == 5 and int(res.state.step) == 10
  assert "checkpoint step 10" in err and "is damaged" in err and "Traceback" not in err
  assert len(os.listdir(run_copy / "checkpoints" / "corrupt")) == 1
  _assert_same_state(res.state, base_run[1])
  more, equal = ckpt_tool.compare(str(run_copy), str(base_run[0]), 10)
  assert equal and more[-1] == "bitwise equal"


def test_every_checkpoint_damaged_stops_and_moves_nothing(run_copy):
  _flip_leaf_bytes(run_copy, 5)
  _flip_leaf_bytes(run_copy, 10)
  before = _snapshot(run_copy)
  with pytest.raises(ckpt_lib.CheckpointCorruptError) as info:
    _train(_cfg(), run_copy)
  msg = str(info.value)
  assert "step 10" in msg and "step 5" in msg and "Nothing was moved" in msg
  assert _snapshot(run_copy) == before


def test_missing_or_truncated_config_json_stops(run_copy):
  cfg_path = run_copy / "config.json"
  text = cfg_path.read_text()
  cfg_path.write_text(text[: len(text) // 2])
  before = _snapshot(run_copy)
  with pytest.raises(workdir_lib.ConfigChangedError, match="config.json cannot be read"):
    _train(_cfg("optim.learning_rate=0.5"), run_copy)
  assert _snapshot(run_copy) == before
  cfg_path.unlink()
  with pytest.raises(workdir_lib.ConfigChangedError, match="config.json is missing"):
    _train(_cfg("optim.learning_rate=0.5"), run_copy)
  res = _train(_cfg("num_steps=12"), run_copy, allow_config_change=True)
  assert res.resumed_from == 10 and int(res.state.step) == 12
  hist = (run_copy / workdir_lib.HISTORY_NAME).read_text()
  assert "config.json" in hist and "missing" in hist


def test_lower_num_steps_says_so(run_copy, capfd):
  res = _train(_cfg("num_steps=7"), run_copy, allow_config_change=True)
  assert int(res.state.step) == 10
  assert "num_steps=7 is below the newest checkpoint (step 10)" in capfd.readouterr().err


def test_divergence_right_after_restore_names_the_checkpoint(run_copy):
  # Checkpoint 10 rewritten with a NaN parameter and a valid digest: the digest cannot see it
  # (it was saved that way), so the NaN guard must name the checkpoint the run came from.
  directory = str(run_copy / "checkpoints")
  tree, _, _ = ckpt_tool.read(directory, 10)
  tree["params"]["params"]["Dense_0"]["bias"] = np.full_like(
    tree["params"]["params"]["Dense_0"]["bias"], np.nan
  )
  shutil.rmtree(os.path.join(directory, "10"))
  ck = ckpt_lib.Checkpointer(directory, async_save=False)
  ck.save(10, jax.tree.map(jnp.asarray, tree))
  ck.close()
  with pytest.raises(trainer.NonFiniteError) as info:
    _train(_cfg("num_steps=12,log_every=1"), run_copy, allow_config_change=True)
  msg = str(info.value)
  assert (
    "at step 11" in msg and "resumed from checkpoint step 10" in msg and "experiments.ckpt" in msg
  )


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


def test_full_disk_stops_within_a_step_and_resumes_bitwise(tmp_path, monkeypatch):
  cfg = _cfg("num_steps=12,log_every=100,eval_every=0")
  ref = _train(cfg, tmp_path / "ref").state
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
      _train(cfg, work, hooks=(fill_after_first_save,))
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
      _train(cfg, work, hooks=(slow_step_11,))
    msg = str(info.value)
    assert "saving checkpoint step 10" in msg and str(work / "checkpoints") in msg
    assert "\n" not in msg.strip()
    assert max(steps_run) <= 11  # stopped within one step of the failed save
    assert sorted(set(os.listdir(work / "checkpoints")) - {"digests"}) == [
      "5"
    ]  # no temporary folder left
    monkeypatch.undo()
    os.remove(filled["path"])
    res = _train(cfg, work)  # space freed: the same command resumes
    assert res.resumed_from == 5
    _assert_same_state(res.state, ref)


def test_lock_on_a_full_disk_is_never_empty(tmp_path):
  with _tmpfs(tmp_path / "small", "64k") as mnt:
    work = mnt / "run"
    os.makedirs(work)
    _fill(str(mnt))
    with pytest.raises(OSError, match="cannot write the workdir lock"):
      workdir_lib.WorkdirLock(str(work)).acquire()
    assert not os.path.exists(work / workdir_lib.LOCK_NAME)
