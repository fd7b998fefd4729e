"""Two-process rehearsal on localhost: the same command on every "host" must equal one process.

Each process has 2 CPU devices and talks to the other over gloo through a loopback
coordinator; the reference is a single process with 4 devices. The trace and the final
parameters must agree to float tolerance (the data-parallel mean is summed in a different
order across processes), only process 0 writes logs, and both processes write their shards of
the FSDP-sharded Orbax checkpoint. The same holds with the data on the devices (the toy's
``data_on_device``, the same rows as the host path).
"""

import os
import subprocess
import sys

import jax
import numpy as np
import pytest

from iclr26_jax.core import metrics as metrics_lib
from tests.conftest import REPO, subprocess_env
from tests.helpers import free_port, restore_toy

ARG = (
  "smoke,num_steps=20,log_every=5,checkpoint_every=10,batch_size=32,toy.hidden=(64,64),"
  "param_sharding=fsdp,progress_bar=False,toy.input_noise=0.1"
)


def _cmd(workdir, *extra, arg=ARG):
  return [
    sys.executable,
    "-m",
    "experiments.main",
    f"--config={REPO}/experiments/configs/toy/regression.py:{arg}",
    f"--workdir={workdir}",
    *extra,
  ]


def _losses(workdir):
  return [
    r["train/loss"]
    for r in metrics_lib.read_jsonl(os.path.join(workdir, "metrics.jsonl"))
    if "train/loss" in r
  ]


def _final_params(workdir):
  step, tree = restore_toy(workdir, ARG)
  return step, tree["params"]


def _two_processes(workdir, arg=ARG, timeout=300, **env_extra) -> list[str]:
  """Runs the command in two processes of 2 CPU devices each; returns their stderr."""
  port = free_port()
  procs = []
  for pid in range(2):
    env = subprocess_env(
      XLA_FLAGS="",
      ICLR26_COORDINATOR=f"127.0.0.1:{port}",
      ICLR26_NUM_PROCESSES=2,
      ICLR26_PROCESS_ID=pid,
      ICLR26_LOCAL_DEVICES=2,
      **env_extra,
    )
    procs.append(
      subprocess.Popen(
        _cmd(workdir, "--multihost", arg=arg),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env,
      )
    )
  outs = []
  for p in procs:
    try:
      out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
      for q in procs:
        q.kill()
      raise
    outs.append(err)
    assert p.returncode == 0, err[-3000:]
  return outs


@pytest.mark.slow
def test_two_processes_equal_one_process(tmp_path):
  single = tmp_path / "single"
  ref = subprocess.run(
    _cmd(single),
    capture_output=True,
    text=True,
    cwd=REPO,
    timeout=300,
    env=subprocess_env(XLA_FLAGS="--xla_force_host_platform_device_count=4"),
  )
  assert ref.returncode == 0, ref.stderr[-3000:]

  multi = tmp_path / "multi"
  outs = _two_processes(multi)
  # Only process 0 writes logs: each step appears once and process 1 prints no log lines.
  assert "step 5 |" in outs[0] and "step 5 |" not in outs[1]
  np.testing.assert_allclose(_losses(multi), _losses(single), rtol=1e-5)
  assert len(_losses(multi)) == 4

  # Both processes wrote their shards of the checkpoint.
  default = multi / "checkpoints" / "20" / "default"
  assert (default / "ocdbt.process_0").is_dir() and (default / "ocdbt.process_1").is_dir()
  s_ref, p_ref = _final_params(single)
  s_mul, p_mul = _final_params(multi)
  assert s_ref == s_mul == 20
  for a, b in zip(jax.tree.leaves(p_ref), jax.tree.leaves(p_mul)):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)

  # The device-data path (toy.data_on_device: the same rows, gathered on the devices from data
  # that each process placed replicated on its own devices) in two processes: the same trace and
  # parameters as the one-process host path.
  device = tmp_path / "multi_device"
  _two_processes(device, ARG + ",toy.data_on_device=True")
  np.testing.assert_allclose(_losses(device), _losses(single), rtol=1e-5)
  s_dev, p_dev = _final_params(device)
  assert s_dev == 20
  for a, b in zip(jax.tree.leaves(p_ref), jax.tree.leaves(p_dev)):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def test_a_rerun_on_a_filled_compilation_cache_completes(tmp_path):
  # With JAX's persistent compilation cache on, the rerun's processes load executables that
  # process 0 wrote during the first run; under jax 0.12.1 such a process waits forever at its
  # first collective. core.distributed turns the cache off in a CPU rehearsal, with a warning.
  cache = dict(JAX_COMPILATION_CACHE_DIR=str(tmp_path / "cache"))
  cache["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
  arg = "smoke,num_steps=4,log_every=2,checkpoint_every=4,batch_size=32,progress_bar=False"
  for run in ("first", "rerun"):
    errs = _two_processes(tmp_path / run, arg=arg, timeout=90, **cache)
    assert all("persistent compilation cache off" in e for e in errs), errs[0][-2000:]
