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

import numpy as np
import pytest

from experiments import ckpt as ckpt_tool
from iclr26_jax.core import checkpoint as ckpt_lib
from tests.core.test_integrity import _assert_same_state, _cfg, _flip_leaf_bytes, _train

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


del errno
