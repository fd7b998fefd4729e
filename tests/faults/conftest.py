import os
import shutil

import pytest

from tests.helpers import train_toy, wide_toy_config

# Tier 2 runs on 8 fake CPU devices; set it here too so `pytest tests/faults` works alone.
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
  os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
  ).strip()


# The run the run-level tests of this folder resume from (test_integrity.py, test_preemption.py);
# module scope: built once by each file that uses it. test_workdir.py has its own.
@pytest.fixture(scope="module")
def base_run(tmp_path_factory):
  """An uninterrupted 10-step toy run (checkpoints 5 and 10): the oracle for every resume."""
  work = tmp_path_factory.mktemp("base") / "run"
  res = train_toy(wide_toy_config(), work)
  return work, res.state


@pytest.fixture
def run_copy(base_run, tmp_path):
  work = tmp_path / "run"
  shutil.copytree(base_run[0], work)
  return work
