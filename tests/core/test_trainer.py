"""Trainer behaviour against independent oracles: bitwise resume, NaN guard, sharded equality,
and a batch too large for memory refused in one line before a workdir exists."""

import json
import os

import jax
import numpy as np
import pytest

from iclr26_jax.core import checkpoint as ckpt_lib
from iclr26_jax.core import metrics as metrics_lib
from experiments import toy
from iclr26_jax.core import trainer
from tests.conftest import Kill, kill_at, need_devices
from tests.helpers import resume_toy_config, train_toy, wide_toy_config


def _params(result):
  return jax.tree.map(np.asarray, jax.device_get(result.state.params))


def _assert_bitwise(a, b):
  la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
  assert len(la) == len(lb)
  for x, y in zip(la, lb):
    np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("kill_step", [17, 20])
def test_resume_is_bitwise_exact(tmp_path, kill_step):
  # Oracle: an uninterrupted run of the same config. A kill between checkpoints (17) and right
  # at a checkpoint step before the save (20) must both end with identical parameters,
  # optimizer state and logged metrics.
  cfg = resume_toy_config("toy.hidden=(16,),toy.input_noise=0.3")
  ref = trainer.train(toy.ToyRegression(cfg), cfg, str(tmp_path / "ref"))
  work = str(tmp_path / "killed")
  with pytest.raises(Kill):
    trainer.train(toy.ToyRegression(cfg), cfg, work, hooks=(kill_at(kill_step),))
  resumed = trainer.train(toy.ToyRegression(cfg), cfg, work)
  assert resumed.resumed_from == 10 * ((kill_step - 1) // 10)
  _assert_bitwise(_params(ref), _params(resumed))
  _assert_bitwise(jax.device_get(ref.state.opt_state), jax.device_get(resumed.state.opt_state))
  log_ref = metrics_lib.read_jsonl(os.path.join(ref.workdir, "metrics.jsonl"))
  log_res = metrics_lib.read_jsonl(os.path.join(work, "metrics.jsonl"))
  assert log_ref == log_res


def test_nan_guard_names_steps_and_keeps_last_good_checkpoint(tmp_path):
  # Step index 13 (the 14th update) produces a NaN loss. Logs every 5 and checkpoints every 10:
  # the guard must fire at the step-15 check, name step 14 and the range 11..15, and leave
  # checkpoint 10 as the newest, restorable and finite.
  cfg = resume_toy_config("toy.nan_at_step=13")
  work = str(tmp_path / "nan")
  with pytest.raises(trainer.NonFiniteError) as info:
    trainer.train(toy.ToyRegression(cfg), cfg, work)
  msg = str(info.value)
  assert "step 14" in msg and "11..15" in msg and "step 10" in msg
  ck = ckpt_lib.Checkpointer(os.path.join(work, "checkpoints"))
  assert ck.steps() == [10]
  method = toy.ToyRegression(cfg)
  abstract = jax.eval_shape(method.init_state, jax.random.PRNGKey(0))
  step, tree = ck.restore(ckpt_lib.abstract_like(abstract.arrays()))
  assert step == 10 and int(tree["step"]) == 10
  assert all(np.isfinite(np.asarray(x)).all() for x in jax.tree.leaves(tree["params"]))
  ck.close()


def test_update_compiles_once(tmp_path):
  cfg = resume_toy_config()
  method = toy.ToyRegression(cfg)
  traces = []
  orig = method.update

  def counted(state, batch):
    traces.append(1)
    return orig(state, batch)

  method.update = counted
  trainer.train(method, cfg, str(tmp_path / "c"))
  assert len(traces) == 1


@pytest.mark.parametrize("sharding", ["replicated", "fsdp"])
def test_eight_device_step_equals_one_device(tmp_path, sharding):
  # Oracle: the same run on a 1-device mesh. Data-parallel gradients are a mean over shards,
  # so only the summation order differs: equal to float32 rounding (rtol 1e-5).
  need_devices(8)
  extra = "toy.hidden=(64,64),batch_size=64"
  one = resume_toy_config(extra + ",mesh.data=1")
  eight = resume_toy_config(extra + f",param_sharding={sharding}")
  r1 = trainer.train(toy.ToyRegression(one), one, str(tmp_path / "one"))
  r8 = trainer.train(toy.ToyRegression(eight), eight, str(tmp_path / "eight"))
  assert len(r8.state.params["params"]["Dense_1"]["kernel"].sharding.device_set) == 8
  if sharding == "fsdp":  # the 64x64 kernel (4096 entries) is split over the data axis
    spec = r8.state.params["params"]["Dense_1"]["kernel"].sharding.spec
    assert "data" in tuple(spec)
  for a, b in zip(jax.tree.leaves(_params(r1)), jax.tree.leaves(_params(r8))):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
  l1 = metrics_lib.read_jsonl(os.path.join(r1.workdir, "metrics.jsonl"))
  l8 = metrics_lib.read_jsonl(os.path.join(r8.workdir, "metrics.jsonl"))
  np.testing.assert_allclose(
    [r["train/loss"] for r in l1 if "train/loss" in r],
    [r["train/loss"] for r in l8 if "train/loss" in r],
    rtol=1e-5,
  )


def test_config_dumped_and_logs_written(tmp_path):
  cfg = resume_toy_config()
  res = trainer.train(toy.ToyRegression(cfg), cfg, str(tmp_path / "d"))
  dumped = json.load(open(os.path.join(res.workdir, "config.json")))
  assert dumped["num_steps"] == 30 and dumped["method"] == "toy_regression"
  steps = [
    r["step"]
    for r in metrics_lib.read_jsonl(os.path.join(res.workdir, "metrics.jsonl"))
    if "train/loss" in r
  ]
  assert steps == [5, 10, 15, 20, 25, 30]
  assert ckpt_lib.Checkpointer(os.path.join(res.workdir, "checkpoints")).steps() == [10, 20, 30]


def test_invalid_trainer_config(tmp_path):
  with pytest.raises(ValueError, match="num_steps"):
    cfg = resume_toy_config("num_steps=0")
    trainer.train(toy.ToyRegression(cfg), cfg, str(tmp_path / "x"))


def test_a_batch_too_large_for_memory_is_one_line_and_leaves_no_workdir(tmp_path):
  from iclr26_jax.core import trainer

  work = tmp_path / "w"
  cfg = wide_toy_config(f"batch_size={10**12}")
  with pytest.raises(trainer.StepMemoryError) as e:
    train_toy(cfg, work)
  msg = str(e.value)
  assert "batch_size=1000000000000" in msg and "nothing was trained" in msg and "\n" not in msg
  assert not work.exists()
