"""A run's saved state cannot be damaged silently: checkpoint digests (sharding invariant, they see
one flipped bit), the fall-back past a damaged newest checkpoint, a lost or garbled digest never
switching verification off, checkpoints written before digests still restoring, the stop when
every checkpoint is damaged (with what was moved aside), a missing or truncated config.json, a
lower ``num_steps``, a divergence right after a restore, and the ``experiments.ckpt`` inspector.

Oracles: an uninterrupted run of the same config (resumed runs must end bitwise equal to it),
the workdir's bytes before and after a refused resume (nothing may change), and the exact bytes of
a leaf planted in the checkpoint's data files (so the damage is known to hit array data).
"""

import os
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments import ckpt as ckpt_tool
from iclr26_jax.core import checkpoint as ckpt_lib
from iclr26_jax.core import sharding as shd
from iclr26_jax.core import trainer
from iclr26_jax.core import workdir as workdir_lib
from tests.conftest import need_devices
from tests.helpers import (
  assert_same_state,
  flip_leaf_bytes,
  snapshot,
  train_toy,
  wide_toy_config,
)


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
  flip_leaf_bytes(run_copy, 10)
  lines, ok = ckpt_tool.inspect(str(run_copy))
  assert not ok
  assert any("step 10" in ln and "DAMAGED: " in ln and "Dense_0/kernel" in ln for ln in lines), (
    lines
  )
  assert any("step 5" in ln and "digest ok" in ln for ln in lines)
  res = train_toy(wide_toy_config(), run_copy)  # the same command again
  err = capfd.readouterr().err
  assert res.resumed_from == 5 and int(res.state.step) == 10
  assert "checkpoint step 10" in err and "is damaged" in err and "Traceback" not in err
  assert len(os.listdir(run_copy / "checkpoints" / "corrupt")) == 1
  assert_same_state(res.state, base_run[1])
  more, equal = ckpt_tool.compare(str(run_copy), str(base_run[0]), 10)
  assert equal and more[-1] == "bitwise equal"


def test_every_checkpoint_damaged_stops_and_moves_nothing(run_copy):
  flip_leaf_bytes(run_copy, 5)
  flip_leaf_bytes(run_copy, 10)
  before = snapshot(run_copy)
  with pytest.raises(ckpt_lib.CheckpointCorruptError) as info:
    train_toy(wide_toy_config(), run_copy)
  msg = str(info.value)
  assert "step 10" in msg and "step 5" in msg and "Nothing was moved" in msg
  assert snapshot(run_copy) == before


def test_a_deleted_step_metadata_does_not_switch_the_digest_off(base_run, run_copy, capfd):
  # The probe: the step's own metadata (which held the only digest) deleted and a data byte
  # flipped; before, this read as "written before digests" and resumed from step 10, exit 0.
  os.remove(run_copy / "checkpoints" / "10" / "_CHECKPOINT_METADATA")
  flip_leaf_bytes(run_copy, 10)
  lines, ok = ckpt_tool.inspect(str(run_copy))
  assert not ok, lines
  assert any("step 10" in ln and "DAMAGED" in ln and "Dense_0/kernel" in ln for ln in lines), lines
  capfd.readouterr()
  res = train_toy(wide_toy_config(), run_copy)
  err = capfd.readouterr().err
  assert res.resumed_from == 5 and int(res.state.step) == 10
  assert err.count("WARNING") == 1 and "checkpoint step 10" in err and "is damaged" in err, err
  assert "Traceback" not in err and "Metadata file does not exist" not in err, err
  assert_same_state(res.state, base_run[1])


def test_a_lost_digest_in_one_place_still_verifies_in_the_other(run_copy):
  os.remove(run_copy / "checkpoints" / "10" / "_CHECKPOINT_METADATA")
  lines, ok = ckpt_tool.inspect(str(run_copy))
  assert ok and any("step 10" in ln and "digest ok" in ln for ln in lines), lines
  res = train_toy(wide_toy_config(), run_copy)
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
  res = train_toy(wide_toy_config(), run_copy)
  err = capfd.readouterr().err
  assert res.resumed_from == 5 and err.count("WARNING") == 1 and "no readable digest" in err, err
  assert_same_state(res.state, base_run[1])


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
  flip_leaf_bytes(run_copy, 10)
  for f in (run_copy / "checkpoints" / "5" / "default").rglob("manifest.ocdbt"):
    f.write_bytes(f.read_bytes()[:10])
  with pytest.raises(ckpt_lib.CheckpointCorruptError) as info:
    train_toy(wide_toy_config(), run_copy)
  msg = str(info.value)
  assert "Nothing was moved" not in msg and "[5] were moved to corrupt/" in msg, msg
  assert os.path.isdir(run_copy / "checkpoints" / "10")


def test_missing_or_truncated_config_json_stops(run_copy):
  cfg_path = run_copy / "config.json"
  text = cfg_path.read_text()
  cfg_path.write_text(text[: len(text) // 2])
  before = snapshot(run_copy)
  with pytest.raises(workdir_lib.ConfigChangedError, match="config.json cannot be read"):
    train_toy(wide_toy_config("optim.learning_rate=0.5"), run_copy)
  assert snapshot(run_copy) == before
  cfg_path.unlink()
  with pytest.raises(workdir_lib.ConfigChangedError, match="config.json is missing"):
    train_toy(wide_toy_config("optim.learning_rate=0.5"), run_copy)
  res = train_toy(wide_toy_config("num_steps=12"), run_copy, allow_config_change=True)
  assert res.resumed_from == 10 and int(res.state.step) == 12
  hist = (run_copy / workdir_lib.HISTORY_NAME).read_text()
  assert "config.json" in hist and "missing" in hist


def test_lower_num_steps_says_so(run_copy, capfd):
  res = train_toy(wide_toy_config("num_steps=7"), run_copy, allow_config_change=True)
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
    train_toy(wide_toy_config("num_steps=12,log_every=1"), run_copy, allow_config_change=True)
  msg = str(info.value)
  assert (
    "at step 11" in msg and "resumed from checkpoint step 10" in msg and "experiments.ckpt" in msg
  )
