"""The device-data path of the ``Method`` protocol against the host path as the oracle.

The toy regression's two data paths draw the same rows (``toy.data_on_device``: the host path's
row indices of every step, gathered inside the jitted step), so a device-path run must train to
the bitwise same state as a host-path run: here a device-path run killed between checkpoints and
resumed, against an uninterrupted host-path run (the resume tests of the host path are in
``test_trainer.py``). The data must enter the step as an argument (traced), not as a constant.
"""

import os

import jax
import numpy as np
import pytest

from iclr26_jax.core import metrics as metrics_lib
from iclr26_jax.core import sharding as shd
from experiments import toy
from iclr26_jax.core import trainer
from tests.conftest import Kill, assert_trees_equal, kill_at, need_devices
from tests.helpers import resume_toy_config


class _Recorded(toy.ToyRegression):
  """The toy on the device path, recording what ``device_batch`` receives and which path ran."""

  def __init__(self, config):
    super().__init__(config)
    self.seen = []

  def get_batch(self, step):
    self.seen.append("host")
    return super().get_batch(step)

  def device_batch(self, data, step):
    self.seen.append(all(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves((data, step))))
    return super().device_batch(data, step)


def test_device_batch_equals_host_batch_and_trains_bitwise_equal(tmp_path):
  need_devices(8)
  cfg = resume_toy_config("toy.hidden=(16,),toy.input_noise=0.3")
  dev_cfg = resume_toy_config("toy.hidden=(16,),toy.input_noise=0.3,toy.data_on_device=True")
  m = toy.ToyRegression(dev_cfg)
  data = m.device_data()
  for s in (0, 29):  # the oracle batch: the host path's rows of step s
    got = jax.jit(m.device_batch)(data, np.int32(s))
    want = m.get_batch(s)
    for k in want:
      np.testing.assert_array_equal(np.asarray(got[k]), want[k])

  # Oracle for both checks: the uninterrupted host-path run. The device-path run is killed
  # between checkpoints and resumed; it must end bitwise equal, with the same logged metrics.
  host = trainer.train(toy.ToyRegression(cfg), cfg, str(tmp_path / "host"))
  work = str(tmp_path / "dev")
  method = _Recorded(dev_cfg)
  with pytest.raises(Kill):
    trainer.train(method, dev_cfg, work, hooks=(kill_at(17),))
  assert method.seen == [True]  # traced once, data and step as arguments; no host batch
  resumed = trainer.train(toy.ToyRegression(dev_cfg), dev_cfg, work)
  assert resumed.resumed_from == 10
  assert_trees_equal(host.state.arrays(), resumed.state.arrays())
  assert metrics_lib.read_jsonl(
    os.path.join(host.workdir, "metrics.jsonl")
  ) == metrics_lib.read_jsonl(os.path.join(work, "metrics.jsonl"))


def test_replicate_and_constrain_batch_layouts():
  need_devices(8)
  mesh = shd.make_mesh({"data": -1})
  tree = shd.replicate({"a": np.arange(12.0).reshape(6, 2), "k": np.uint32([1, 2])}, mesh)
  assert tree["a"].dtype == np.float32 and tree["a"].sharding.is_fully_replicated
  assert len(tree["a"].sharding.device_set) == 8
  np.testing.assert_array_equal(np.asarray(tree["a"]), np.arange(12.0).reshape(6, 2))

  @jax.jit
  def draw(a):
    return shd.constrain_batch({"x": jax.numpy.tile(a, (4, 1))}, mesh)

  x = draw(tree["a"])["x"]
  assert x.sharding.spec[0] == "data" and x.shape == (24, 2)
  with pytest.raises(ValueError, match="cannot be split"):
    jax.jit(lambda a: shd.constrain_batch(a, mesh))(tree["a"])  # 6 rows over 8 devices
