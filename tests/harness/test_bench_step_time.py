"""``benchmarks.step_time`` runs at tiny sizes and prints both data paths (no time is
asserted); its host-path reference hands the trainer exactly the device path's batch."""

import re

from absl import flags
import jax
import numpy as np

from benchmarks import step_time
from iclr26_jax.qam.method import QAMMethod


def test_step_time_bench_prints_device_and_host_rows(capsys):
  fv = flags.FlagValues()
  step_time.define_flags(fv)
  argv = fv(
    ["step_time", "--methods=lmkan", "--tiny", "--warmup=1", "--window=2", "--windows=2"]
    + ["--rounds=1"]
  )
  out = step_time.main(argv, fv)
  text = capsys.readouterr().out
  for path in ("device", "host"):
    assert re.search(rf"^{path} +\d+\.\d+ +\d+\.\d+ +\d+\.\d+$", text, re.M), text
  assert "final params max|device - host|" in text
  assert set(out) == {"lmkan"} and out["lmkan"]["device_ms"] > 0 and out["lmkan"]["host_ms"] > 0


def test_host_reference_returns_the_device_batch_as_host_arrays():
  # Oracle: the method's own device_batch, jitted here. The reference's batch must be host numpy
  # arrays of the same values (this process's rows: all of them in one process).
  cfg = step_time._config("qam", 4, tiny=True)
  host = step_time.host_reference(QAMMethod)(cfg)
  assert host.device_data() is None
  got = host.get_batch(3)
  want = jax.jit(host.device_batch)(QAMMethod.device_data(host), np.int32(3))
  assert set(got) == set(want)
  for k in want:
    assert isinstance(got[k], np.ndarray)
    np.testing.assert_array_equal(got[k], np.asarray(want[k]))
