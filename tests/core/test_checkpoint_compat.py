"""A checkpoint written by the previous release (jax 0.10.2, orbax-checkpoint 0.12.8 through
``CheckpointManagerOptions(max_to_keep=...)``) restores under the current stack's
``preservation_policy`` API: the toy regression's smoke run, step 20, committed in
tests/core/data/toy_run_jax0.10.2 (made with ``python -m experiments.main
--config=experiments/configs/toy/regression.py:smoke`` at the last commit on jax 0.10.2)."""

import os
import shutil
import subprocess
import sys

from iclr26_jax.core import metrics as metrics_lib
from tests.conftest import REPO, subprocess_env

OLD_RUN = os.path.join(os.path.dirname(__file__), "data", "toy_run_jax0.10.2")


def test_previous_release_checkpoint_resumes(tmp_path):
  workdir = tmp_path / "run"
  shutil.copytree(OLD_RUN, workdir)
  out = subprocess.run(
    [
      sys.executable,
      "-m",
      "experiments.main",
      "--config=experiments/configs/toy/regression.py:smoke",
      f"--workdir={workdir}",
      "--config.progress_bar=False",
      "--config.num_steps=25",
      "--allow_config_change",
    ],
    capture_output=True,
    text=True,
    cwd=REPO,
    timeout=600,
    env=subprocess_env(XLA_FLAGS="--xla_backend_optimization_level=0"),
  )
  assert out.returncode == 0, out.stderr[-4000:]
  # Restored (its digests checked), not started over, and trained on to the new end.
  assert "resumed from checkpoint step 20" in out.stderr, out.stderr[-4000:]
  assert "quarantin" not in out.stderr.lower()
  steps = [r["step"] for r in metrics_lib.read_jsonl(str(workdir / "metrics.jsonl"))]
  assert min(steps) >= 20 and max(steps) == 25
  assert sorted(d for d in os.listdir(workdir / "checkpoints") if d.isdigit()) == ["20", "25"]
