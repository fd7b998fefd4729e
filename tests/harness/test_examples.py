"""examples/: one short script per method, each run here with ``--tiny`` (the same code path at
tiny sizes) in a fresh interpreter, as a user would run it from the repository root."""

import glob
import os
import subprocess

import pytest

from tests.conftest import REPO, strict_python, subprocess_env

METHODS = ("anybcq", "dsb", "lmkan", "minpv", "pdns", "qam")
SCRIPTS = sorted(glob.glob(os.path.join(REPO, "examples", "*.py")))


def test_one_example_per_method():
  names = {os.path.basename(p)[:-3] for p in SCRIPTS}
  missing = sorted(set(METHODS) - names)
  assert not missing, f"examples/ lacks a script for {missing}"


@pytest.mark.parametrize("path", SCRIPTS, ids=[os.path.basename(p) for p in SCRIPTS])
def test_example_is_short(path):
  with open(path) as f:
    n = sum(1 for _ in f)
  assert n <= 40, f"{path}: {n} lines (examples are at most 40)"


@pytest.mark.split_params
@pytest.mark.parametrize("path", SCRIPTS, ids=[os.path.basename(p) for p in SCRIPTS])
def test_example_runs_tiny(path):
  # One CPU device, as a user's laptop has (not the tier's 8 fake ones); LLVM at -O0 for the
  # compile-bound ones, the default for MinPV's, whose fits run 400 steps of batch 4096.
  o0 = os.path.basename(path) != "minpv.py"
  env = subprocess_env(XLA_FLAGS="--xla_backend_optimization_level=0" if o0 else "")
  r = subprocess.run(
    strict_python(path, "--tiny", module=False),
    cwd=REPO,
    env=env,
    capture_output=True,
    text=True,
    timeout=300,
  )
  assert r.returncode == 0, (
    f"{path} --tiny exited {r.returncode}:\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
  )
  assert r.stdout.strip(), f"{path} --tiny printed nothing"
