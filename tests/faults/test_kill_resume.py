"""A real SIGKILL mid-run, then the same command again: bitwise equal to an uninterrupted run."""

import os
import signal
import subprocess
import sys
import time

import jax
import numpy as np
import pytest

from tests.conftest import REPO, subprocess_env
from tests.helpers import restore_toy

ARG = (
  "num_steps=3000,checkpoint_every=300,log_every=100,toy.hidden=(32,),"
  "toy.input_noise=0.2,progress_bar=False"
)


def _cmd(workdir):
  return [
    sys.executable,
    "-m",
    "experiments.main",
    f"--config={REPO}/experiments/configs/toy/regression.py:{ARG}",
    f"--workdir={workdir}",
  ]


def _final(workdir):
  step, tree = restore_toy(workdir, ARG)
  return step, jax.tree.map(np.asarray, tree)


@pytest.mark.slow
def test_sigkill_then_same_command_is_bitwise_exact(tmp_path):
  env = subprocess_env(XLA_FLAGS="")
  ref = subprocess.run(
    _cmd(tmp_path / "ref"), capture_output=True, text=True, cwd=REPO, env=env, timeout=600
  )
  assert ref.returncode == 0, ref.stderr[-3000:]

  work = tmp_path / "killed"
  proc = subprocess.Popen(
    _cmd(work), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO, env=env
  )
  ckdir = work / "checkpoints"
  deadline = time.time() + 300
  while time.time() < deadline and proc.poll() is None:
    if ckdir.is_dir() and any(d.isdigit() and int(d) >= 600 for d in os.listdir(ckdir)):
      break
    time.sleep(0.01)
  assert proc.poll() is None, "the run finished before it could be killed"
  proc.send_signal(signal.SIGKILL)
  proc.wait()

  again = subprocess.run(_cmd(work), capture_output=True, text=True, cwd=REPO, env=env, timeout=600)
  assert again.returncode == 0, again.stderr[-3000:]
  assert "resumed from checkpoint step" in again.stderr
  (s1, t1), (s2, t2) = _final(tmp_path / "ref"), _final(work)
  assert s1 == s2 == 3000
  for a, b in zip(jax.tree.leaves(t1), jax.tree.leaves(t2)):
    np.testing.assert_array_equal(a, b)
