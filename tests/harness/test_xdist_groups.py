"""The Makefile's work units hold: under ``-n 2 --dist loadgroup`` every test of a file runs on one
worker (its module fixtures are built once), and each parameter of a ``split_params`` test is a
unit of its own.

Why a test: pytest 9.2 names items by a structured id that pytest-xdist 3.8 does not rewrite, so
the ``@group`` suffix xdist adds is lost and the scheduler spreads a file over both workers. No
test failed; the suite only got slower (measured in one CI run: QAM's 104 s bandit fixture built
on both workers, tier 3 at 981 s). ``setup.cfg`` pins pytest below 9.2 for that reason.

Oracle: the worker each test reports, read back from files the tests write.
"""

import json
import os
import shutil
import subprocess
import sys

from tests.conftest import REPO

_TESTS = """
import json, os, pytest

def _record(request):
  path = os.path.join(os.environ["GROUPS_OUT"], request.node.name + ".json")
  with open(path, "w") as f:
    json.dump(os.environ.get("PYTEST_XDIST_WORKER"), f)

@pytest.mark.parametrize("i", range(6))
def test_same_file(i, request):
  _record(request)

@pytest.mark.split_params
@pytest.mark.parametrize("i", range(6))
def test_split(i, request):
  import time
  time.sleep(0.2)  # long enough that both workers take some
  _record(request)
"""


def test_one_worker_per_file_and_split_params_spread(tmp_path):
  root = tmp_path / "proj"
  (root / "tests").mkdir(parents=True)
  shutil.copy(os.path.join(REPO, "tests", "conftest.py"), root / "tests" / "conftest.py")
  (root / "tests" / "__init__.py").write_text("")
  (root / "tests" / "test_units.py").write_text(_TESTS)
  (root / "pytest.ini").write_text("[pytest]\nmarkers =\n  split_params: one unit per parameter\n")
  out = tmp_path / "out"
  out.mkdir()
  env = dict(os.environ, GROUPS_OUT=str(out), PYTHONPATH=str(root))
  proc = subprocess.run(
    [
      sys.executable,
      "-m",
      "pytest",
      "-q",
      "-p",
      "no:cacheprovider",
      "-n",
      "2",
      "--dist",
      "loadgroup",
    ],
    cwd=root,
    env=env,
    capture_output=True,
    text=True,
    timeout=300,
  )
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  workers = {p[: -len(".json")]: json.loads((out / p).read_text()) for p in os.listdir(out)}
  assert len(workers) == 12, workers
  same = {workers[f"test_same_file[{i}]"] for i in range(6)}
  split = {workers[f"test_split[{i}]"] for i in range(6)}
  assert len(same) == 1, f"one file spread over workers {same}: loadgroup units are broken"
  assert split == {"gw0", "gw1"}, f"split_params parameters all on {split}"
