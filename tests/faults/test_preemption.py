"""Signals and dead peers. SIGTERM / SIGINT save at a step boundary (every process at the same
step), exit 0, and the same command resumes bitwise equal to an uninterrupted run. A signal before
the loop runs stops the run cleanly: during start-up (imports) in one line with nothing written,
while the data loads with the lock released and the same command resuming. A process whose peer
died stops within ICLR26_PEER_TIMEOUT with one line naming it.

Oracles: uninterrupted runs of the same config (one process in-process; two processes on
localhost over gloo, as in tests/core/test_multihost.py), compared leaf by leaf, bit for bit, and
the workdir after the signal (absent, or without a lock).
"""

import os
import shutil
import signal
import subprocess
import sys
import time

import jax
import numpy as np
import pytest

from experiments.configs.toy import regression
from iclr26_jax.core import checkpoint as ckpt_lib
from iclr26_jax.core import metrics as metrics_lib
from experiments import toy
from iclr26_jax.core import trainer
from tests.conftest import REPO, subprocess_env
from tests.helpers import (
  assert_same_state,
  free_port,
  restore_toy,
  stderr_lines,
  train_toy,
  wide_toy_config,
)

BASE = "smoke,num_steps=12,checkpoint_every=5,log_every=5,progress_bar=False,mesh.data=1"


def _train(arg, work, **kw):
  cfg = regression.get_config(arg)
  return trainer.train(toy.ToyRegression(cfg), cfg, str(work), **kw)


def _same(a, b):
  la, lb = jax.tree.leaves(jax.device_get(a.arrays())), jax.tree.leaves(jax.device_get(b.arrays()))
  assert len(la) == len(lb)
  for x, y in zip(la, lb):
    assert np.asarray(x).tobytes() == np.asarray(y).tobytes()


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_signal_saves_at_the_step_boundary_and_resumes_bitwise(tmp_path, capfd, sig):
  ref = _train(BASE, tmp_path / "ref").state
  work = tmp_path / "run"

  def send_at_7(step, state):
    del state
    if step == 7:
      os.kill(os.getpid(), getattr(signal, sig))

  previous = signal.getsignal(getattr(signal, sig))
  res = _train(BASE, work, hooks=(send_at_7,))
  assert signal.getsignal(getattr(signal, sig)) is previous  # handlers restored
  err = capfd.readouterr().err
  assert res.preempted == sig and int(res.state.step) == 7
  assert f"{sig} received: stopped at step 7 of 12 with checkpoint step 7 saved" in err
  assert sorted(int(d) for d in os.listdir(work / "checkpoints") if d.isdigit()) == [5, 7]
  events = [r for r in metrics_lib.read_jsonl(str(work / "metrics.jsonl")) if r.get("event")]
  assert events == [{"step": 7, "event": "preempted", "signal": sig}]
  again = _train(BASE, work)  # the same command
  assert again.resumed_from == 7 and int(again.state.step) == 12 and again.preempted is None
  _same(again.state, ref)
  # The result carries the whole curve, the interrupted run's part included: the file's rows.
  rows = [r for r in metrics_lib.read_jsonl(str(work / "metrics.jsonl")) if "event" not in r]
  assert again.history == rows and [r["step"] for r in rows if "train/loss" in r] == [5, 10, 12]


def test_second_sigint_during_the_stop_save_is_a_keyboard_interrupt_and_the_disk_resumes(
  tmp_path, monkeypatch, capfd
):
  # The second Ctrl-C lands while the run waits for its stop-save (as in Orbax's thread join). The
  # run must end with that KeyboardInterrupt (before, the cleanup replaced it by a false "saving
  # checkpoint step 7 failed"), leave no lock, and the same command resume from what is on disk,
  # clearing a temporary folder an abandoned save left.
  ref = _train(BASE, tmp_path / "ref").state
  work = tmp_path / "run"
  real_wait = ckpt_lib.Checkpointer.wait
  stopping = []

  def send_at_7(step, state):
    del state
    if step == 7:
      stopping.append(True)
      os.kill(os.getpid(), signal.SIGINT)

  def wait(self):
    if stopping and len(stopping) == 1:
      stopping.append(True)
      raise KeyboardInterrupt  # what the second SIGINT's handler raises
    return real_wait(self)

  monkeypatch.setattr(ckpt_lib.Checkpointer, "wait", wait)
  with pytest.raises(KeyboardInterrupt):
    _train(BASE, work, hooks=(send_at_7,))
  monkeypatch.undo()
  assert "failed" not in capfd.readouterr().err
  assert not (work / "run.lock").exists()
  on_disk = sorted(int(d) for d in os.listdir(work / "checkpoints") if d.isdigit())
  assert on_disk in ([5], [5, 7]), on_disk  # the stop-save finished or not; nothing else
  stale = work / "checkpoints" / f"9{ckpt_lib._TMP_MARK}"
  stale.mkdir()
  again = _train(BASE, work)
  assert f"removed {stale}" in capfd.readouterr().err
  assert not stale.exists()
  assert again.resumed_from == on_disk[-1] and int(again.state.step) == 12
  _same(again.state, ref)


# Two processes of 2 CPU devices each: process 1 is signalled when the batch of step index 5 is
# drawn; each later host batch waits 0.3 s, as accelerator steps take time, so that JAX's
# preemption sync (a few seconds here) agrees on a step before the run ends.
ARG2 = (
  "smoke,num_steps=60,log_every=10,checkpoint_every=20,batch_size=32,toy.hidden=(16,),"
  "param_sharding=fsdp,progress_bar=False"
)


def _launch(workdir, arg, port, timeout_env="10"):
  procs = []
  for pid in range(2):
    env = subprocess_env(
      XLA_FLAGS="",
      ICLR26_COORDINATOR=f"127.0.0.1:{port}",
      ICLR26_NUM_PROCESSES=2,
      ICLR26_PROCESS_ID=pid,
      ICLR26_LOCAL_DEVICES=2,
      ICLR26_PEER_TIMEOUT=timeout_env,
    )
    cmd = [
      sys.executable,
      "-m",
      "experiments.main",
      "--multihost",
      f"--config={REPO}/experiments/configs/toy/regression.py:{arg}",
      f"--workdir={workdir}",
    ]
    procs.append(
      subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=env
      )
    )
  return procs


def _wait(procs, timeout=300):
  outs = []
  for p in procs:
    try:
      _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
      for q in procs:
        q.kill()
      raise
    outs.append((p.returncode, err))
  return outs


@pytest.mark.slow
def test_two_processes_sigterm_one_both_save_the_same_step_and_resume_bitwise(tmp_path):
  ref_dir = tmp_path / "ref"
  for code, err in _wait(_launch(ref_dir, ARG2, free_port())):
    assert code == 0, err[-3000:]
  work = tmp_path / "run"
  faulty = ARG2 + ",toy.signal_at_step=5,toy.step_delay=0.3"
  outs = _wait(_launch(work, faulty, free_port()))
  for code, err in outs:
    assert code == 0, err[-3000:]
  line = [ln for ln in outs[0][1].splitlines() if "SIGTERM received: stopped at step" in ln]
  assert len(line) == 1, outs[0][1][-3000:]
  stop = int(line[0].split("stopped at step ")[1].split()[0])
  assert 5 < stop < 60
  assert "SIGTERM received" not in outs[1][1]  # only process 0 prints
  steps = sorted(int(d) for d in os.listdir(work / "checkpoints") if d.isdigit())
  assert steps[-1] == stop
  default = work / "checkpoints" / str(stop) / "default"
  assert (default / "ocdbt.process_0").is_dir() and (default / "ocdbt.process_1").is_dir()
  # The same command (the fault step is behind the checkpoint, so it does not fire again).
  outs = _wait(_launch(work, faulty, free_port()))
  for code, err in outs:
    assert code == 0, err[-3000:]
  assert f"resumed from checkpoint step {stop}" in outs[0][1]
  (s1, t1), (s2, t2) = restore_toy(str(ref_dir), ARG2), restore_toy(str(work), ARG2)
  assert s1 == s2 == 60
  for a, b in zip(jax.tree.leaves(t1), jax.tree.leaves(t2)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.slow
def test_dead_peer_stops_the_other_within_the_timeout(tmp_path):
  # Process 1 SIGKILLs itself mid-run; process 0 must stop by itself, in one line, long before
  # JAX's own 100 s heartbeat timeout (it hung ~80-90 s before the watch existed).
  faulty = ARG2 + ",num_steps=100000,toy.signal_at_step=5,toy.signal_name=SIGKILL"
  procs = _launch(tmp_path / "run", faulty, free_port(), timeout_env="3")
  t0 = time.monotonic()
  (code0, err0), (code1, _) = _wait(procs, timeout=120)
  elapsed = time.monotonic() - t0
  assert code1 == -signal.SIGKILL
  assert code0 == 1, err0[-3000:]
  lines = [ln for ln in err0.splitlines() if ln.startswith("error: ")]
  assert len(lines) == 1 and "lost process 1 of 2" in lines[0], err0[-3000:]
  assert "Traceback" not in err0 and "Check failure" not in err0
  assert elapsed < 60  # the whole run, start-up included; the hang it replaces was 80-90 s


# -- signals before the loop runs ------------------------------------------------------------------


def test_sigint_during_start_up_is_one_line_and_writes_nothing(tmp_path):
  import signal
  import time

  work = tmp_path / "w"
  proc = subprocess.Popen(
    [
      sys.executable,
      "-m",
      "experiments.main",
      "--config=experiments/configs/toy/regression.py:smoke,progress_bar=False",
      f"--workdir={work}",
    ],
    cwd=REPO,
    env=subprocess_env(XLA_FLAGS=""),
    stderr=subprocess.PIPE,
    text=True,
  )
  time.sleep(1.0)  # imports: before, this was a KeyboardInterrupt traceback or lost
  proc.send_signal(signal.SIGINT)
  _, err = proc.communicate(timeout=120)
  assert proc.returncode == 0, err
  assert stderr_lines(err) == [
    "SIGINT received during start-up: stopped before anything was written; run the same "
    "command to start"
  ], err
  assert not work.exists()


def test_signal_while_the_run_starts_releases_the_lock_and_resumes(base_run, run_copy):
  import signal

  from experiments import toy
  from iclr26_jax.core import interrupt
  from iclr26_jax.core import workdir as workdir_lib

  class SignalledDuringDataLoad(toy.ToyRegression):
    def device_data(self):
      os.kill(os.getpid(), signal.SIGTERM)  # as a scheduler would, while the data loads
      return super().device_data()

  previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
  shutil.rmtree(run_copy / "checkpoints" / "10")  # resume from 5: the loop has work to do
  interrupt.install()
  try:
    cfg = wide_toy_config()
    with pytest.raises(interrupt.Interrupted) as e:
      from iclr26_jax.core import trainer

      trainer.train(SignalledDuringDataLoad(cfg), cfg, str(run_copy))
  finally:
    for s, h in previous.items():
      signal.signal(s, h)
    interrupt._state.update(installed=False, phase="start", received=None)
  assert e.value.signal_name == "SIGTERM"
  assert not (run_copy / workdir_lib.LOCK_NAME).exists()  # no stale lock
  res = train_toy(wide_toy_config(), run_copy)  # the same command resumes
  assert res.resumed_from == 5
  assert_same_state(res.state, base_run[1])
