"""The reproduce job never records a value it did not measure: a claim whose training took a
signal is not valued, its previous row and plots stay, a rerun resumes it to the uninterrupted
value; one job per output folder; results.json merged, never rewritten from a stale copy."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from experiments import reproduce
from experiments.claims import Claim, ClaimResult
from tests.conftest import REPO, subprocess_env

TOY = "smoke,num_steps=12,log_every=4,checkpoint_every=5,progress_bar=False"
INFO = dict(
  date="2026-01-01T00:00:00Z",
  commit="0" * 40,
  dirty=False,
  scale="laptop",
  seed=0,
  budget=1.0,
  versions={"jax": "x"},
)


def _toy_claim(signal_at=None):
  """A claim that trains the toy regression in its outdir (resumable) and values the final
  parameter error; ``signal_at``: send SIGINT to this process after that step (once)."""

  def run(ctx):
    from experiments.configs.toy import regression
    from experiments import toy
    from iclr26_jax.core import trainer

    cfg = regression.get_config(TOY)
    hooks = ()
    if signal_at is not None:

      def send(step, state):
        del state
        if step == signal_at:
          os.kill(os.getpid(), signal.SIGINT)

      hooks = (send,)
    res = trainer.train(toy.ToyRegression(cfg), cfg, os.path.join(ctx.outdir, "work"), hooks=hooks)
    plot = os.path.join(ctx.outdir, "plot.txt")
    with open(plot, "w") as f:
      f.write("new")
    return ClaimResult(value=float(res.eval_metrics["eval/mse"]), details="", plots=[plot])

  return Claim(
    name="core/toy_probe",
    method="core",
    config="toy",
    measure="eval mse",
    reference=0.0,
    reference_source="none",
    direction="lower",
    threshold=1e9,
    run=run,
  )


def test_interrupted_claim_is_not_valued_and_resumes_to_the_uninterrupted_value(tmp_path):
  ref = reproduce.run_claims([_toy_claim()], str(tmp_path / "ref"), False, 0, info=INFO)[0]

  out = tmp_path / "out"
  old = out / "core__toy_probe"
  old.mkdir(parents=True)
  (old / "plot.txt").write_text("previous")  # the previous measurement's plot
  rows = []
  with pytest.raises(reproduce.ClaimInterrupted) as e:
    reproduce.run_claims(
      [_toy_claim(signal_at=6)], str(out), False, 0, info=INFO, on_row=rows.append
    )
  assert e.value.claim == "core/toy_probe" and not rows  # nothing valued, nothing written
  assert (old / "plot.txt").read_text() == "previous"
  partial = out / "core__toy_probe.partial" / "work" / "checkpoints"
  assert "6" in os.listdir(partial)  # saved at the signal's step boundary

  again = reproduce.run_claims([_toy_claim()], str(out), False, 0, info=INFO)[0]
  assert again["value"] == ref["value"]  # resumed bitwise from step 6
  assert (old / "plot.txt").read_text() == "new"
  assert again["plots"] == [str(old / "plot.txt")]
  assert not (out / "core__toy_probe.partial").exists()


def test_stale_partial_from_another_run_is_not_resumed(tmp_path):
  out = tmp_path / "out"
  partial = out / "core__toy_probe.partial"
  (partial / "work").mkdir(parents=True)
  (partial / "RUN.json").write_text(json.dumps({"commit": "1" * 40}))
  (partial / "work" / "junk").write_text("x")
  reproduce.run_claims([_toy_claim()], str(out), False, 0, info=INFO)
  assert not (out / "core__toy_probe" / "work" / "junk").exists()


def test_finished_claims_are_kept_only_at_the_same_measurement():
  row = dict(INFO, name="a", error=None)
  assert reproduce.same_measurement(row, INFO)
  for k, v in (("commit", "1" * 40), ("scale", "full"), ("seed", 1), ("versions", {"jax": "y"})):
    assert not reproduce.same_measurement(dict(row, **{k: v}), INFO), k
  assert not reproduce.same_measurement(dict(row, dirty=True), INFO)
  assert not reproduce.same_measurement(dict(row, error="Traceback"), INFO)
  assert not reproduce.same_measurement(row, dict(INFO, commit="unknown"))


def _reproduce(out, *extra):
  return subprocess.Popen(
    [sys.executable, "-m", "experiments.reproduce", f"--out={out}", "--only=core", *extra],
    cwd=REPO,
    env=subprocess_env(XLA_FLAGS="--xla_backend_optimization_level=0"),
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    text=True,
  )


def test_cli_signal_stops_the_job_keeps_rows_and_a_second_job_is_refused(tmp_path):
  out = tmp_path / "out"
  out.mkdir()
  earlier = [dict(INFO, name="core/toy_ols_recovery", value=0.5, passed=False, error=None)]
  (out / "results.json").write_text(json.dumps(earlier))
  job = _reproduce(out)
  deadline = time.time() + 120
  while not (out / "run.lock").exists() and time.time() < deadline:
    time.sleep(0.05)
  time.sleep(0.5)
  second = _reproduce(out)
  _, err2 = second.communicate(timeout=120)
  assert second.returncode == 2 and "is in use by another run (pid" in err2, err2
  assert "--out" in err2 and "--workdir" not in err2
  job.send_signal(signal.SIGTERM)
  _, err = job.communicate(timeout=120)
  assert job.returncode == 143, err[-3000:]
  lines = [ln for ln in err.splitlines() if "SIGTERM received" in ln]
  assert len(lines) == 1 and "Traceback" not in err, err[-3000:]
  assert json.loads((out / "results.json").read_text()) == earlier
