"""Every experiment config: a smoke run through experiments.main, a checkpoint, and a resume."""

import glob
import importlib.util
import os
import subprocess
import sys

import pytest

from iclr26_jax.core import metrics as metrics_lib
from tests.conftest import REPO, strict_python, subprocess_env

CONFIGS = sorted(
  p
  for p in glob.glob(os.path.join(REPO, "experiments/configs/**/*.py"), recursive=True)
  if not p.endswith("__init__.py")
)


def _load(path, arg):
  spec = importlib.util.spec_from_file_location("cfg_under_test", path)
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  return mod.get_config(arg)


@pytest.fixture(scope="module")
def compile_cache(tmp_path_factory):
  """One persistent XLA compilation cache for every run of this module: the resume run of a
  config (same shapes) loads its executables instead of compiling them again, which halves the
  cost of the ~40 subprocess runs here."""
  return str(tmp_path_factory.mktemp("jax_cache"))


def _run(path, workdir, cache, *extra):
  # strict_python: a DeprecationWarning / FutureWarning raised from the project's own code fails
  # the smoke run (every config of every method runs here).
  return subprocess.run(
    strict_python(
      "experiments.main",
      f"--config={path}:smoke",
      f"--workdir={workdir}",
      "--config.progress_bar=False",
      *extra,
    ),
    capture_output=True,
    text=True,
    cwd=REPO,
    timeout=600,
    # Smoke runs are compile-bound: LLVM at -O0 compiles ~30% faster (alpha_csbm smoke: 27.6
    # -> 19.4 CPU-s) and the few steps run slower by less than that.
    env=subprocess_env(
      XLA_FLAGS="--xla_backend_optimization_level=0",
      JAX_COMPILATION_CACHE_DIR=cache,
      JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0,
    ),
  )


def test_there_are_configs():
  assert CONFIGS


# What runs here (a subprocess each) is kept inside CI's budget:
# - the smoke run: every config file, except the point-maze agent variants of
#   `qam/pointmaze_qam.py` (`pointmaze_{bc,fql,qam_e,qam_f}.py` differ from it only in
#   `config.agent` fields; each agent's update runs in tests/qam/test_qam_agent.py, and every
#   config file is built, default and smoke, by `test_every_config_builds` below);
# - the resume half: the toy (the trainer's resume and config-change refusal through
#   experiments.main), AnyBCQ's LM and lmKAN (no other resume test of theirs); the other methods
#   check exact resume of their methods in their own tests (qam/test_qam_method.py,
#   pdns/test_pdns_method.py, dsb/test_dsb_csbm.py, minpv/test_minpv_method.py).
_AGENT_VARIANTS = {
  os.path.join(REPO, "experiments/configs/qam", f"pointmaze_{v}.py")
  for v in ("bc", "fql", "qam_e", "qam_f")
}
RUN_CONFIGS = [p for p in CONFIGS if p not in _AGENT_VARIANTS]
_RESUMED = {
  os.path.join(REPO, "experiments/configs/toy/regression.py"),
  os.path.join(REPO, "experiments/configs/anybcq/lm.py"),
  os.path.join(REPO, "experiments/configs/lmkan/teacher.py"),
}


def test_every_config_builds():
  for path in CONFIGS:
    for arg in (None, "smoke"):
      cfg = _load(path, arg)
      assert cfg.method and cfg.is_locked, (path, arg)
  assert _AGENT_VARIANTS <= set(CONFIGS) and _RESUMED <= set(RUN_CONFIGS)


@pytest.mark.split_params
@pytest.mark.parametrize("path", RUN_CONFIGS, ids=[os.path.relpath(p, REPO) for p in RUN_CONFIGS])
def test_config_smoke_and_resume(tmp_path, path, compile_cache):
  cfg = _load(path, "smoke")
  assert cfg.method, f"{path} sets no method"
  workdir = tmp_path / "run"
  first = _run(path, workdir, compile_cache)
  assert first.returncode == 0, first.stderr[-4000:]
  ckpts = sorted(int(d) for d in os.listdir(workdir / "checkpoints") if d.isdigit())
  assert ckpts and ckpts[-1] == cfg.num_steps
  assert (workdir / "config.json").exists()
  if path not in _RESUMED:
    return
  more = cfg.num_steps + cfg.log_every
  if "/toy/" in path:  # a changed config stops, in one line (once: it is the shared trainer)
    refused = _run(path, workdir, compile_cache, f"--config.num_steps={more}")
    assert refused.returncode != 0 and "num_steps: 20 -> 25" in refused.stderr
    assert "Traceback" not in refused.stderr
  second = _run(path, workdir, compile_cache, f"--config.num_steps={more}", "--allow_config_change")
  assert second.returncode == 0, second.stderr[-4000:]
  assert f"resumed from checkpoint step {cfg.num_steps}" in second.stderr
  steps = [r["step"] for r in metrics_lib.read_jsonl(str(workdir / "metrics.jsonl"))]
  assert max(steps) == more


def test_help_lists_flags():
  out = subprocess.run(
    [sys.executable, "-m", "experiments.main", "--help"],
    capture_output=True,
    text=True,
    cwd=REPO,
    env=subprocess_env(),
    timeout=120,
  )
  assert out.returncode == 0, out.stderr[-2000:]  # absl exits 1 after --help; a shell reads failure
  text = out.stdout + out.stderr
  for flag in ("--config", "--workdir", "--multihost", "--allow_config_change", "--show_variants"):
    assert flag in text
  assert "ARG grammar" in text and "key=value" in text and "variant" in text


@pytest.mark.parametrize(
  "spec,extra,expected",
  [
    (
      "experiments/configs/toy/nonexistent.py:smoke",
      (),
      "config file 'experiments/configs/toy/nonexistent.py' not found",
    ),
    (
      "experiments/configs/toy/regression.py:smoke,num_steps=abc",
      (),
      "config key 'num_steps' is an int; got 'abc'",
    ),
    # keys renamed by the refit (core.config.RENAMED_KEYS), in the :ARG and the flag form
    (
      "experiments/configs/lmkan/teacher.py:smoke,lmkan.lr=1e-3",
      (),
      "config key 'lmkan.lr' was renamed: use 'optim.learning_rate'",
    ),
    (
      "experiments/configs/toy/regression.py:smoke",
      ("--config.agent.optim.learning_rate=1",),
      "config key 'agent.optim.learning_rate' was renamed: use 'optim.learning_rate'",
    ),
  ],
)
def test_config_mistakes_are_one_line(tmp_path, spec, extra, expected):
  out = subprocess.run(
    [
      sys.executable,
      "-m",
      "experiments.main",
      f"--config={spec}",
      f"--workdir={tmp_path / 'w'}",
      *extra,
    ],
    capture_output=True,
    text=True,
    cwd=REPO,
    env=subprocess_env(),
    timeout=120,
  )
  assert out.returncode != 0
  assert expected in out.stderr
  assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) <= 2
  assert not (tmp_path / "w").exists()


def test_show_variants_lists_variants_and_fields():
  from experiments import main as main_lib

  text = main_lib.describe_config(
    os.path.join(REPO, "experiments/configs/toy/regression.py"), "smoke,toy.dim=3"
  )
  assert "variants: mlp, smoke" in text
  lines = text.splitlines()
  assert any(l.split() == ["toy.dim", "=", "3"] for l in lines)
  assert any(l.split() == ["num_steps", "=", "20"] for l in lines)  # smoke applied
  pdns = main_lib.describe_config(os.path.join(REPO, "experiments/configs/pdns/ising.py"), None)
  assert "variants: baseline, laptop, smoke" in pdns


def test_done_summary_is_compact():
  from experiments import main as main_lib

  metrics = {f"m/{i}": float(i) for i in range(20)}
  metrics["train/loss"] = 0.123456
  text = main_lib.summary(metrics)
  assert text.startswith("train/loss 0.1235") and "+15 more" in text
  assert text.count(",") == 6


def test_unknown_method_is_a_clear_error():
  from experiments import registry

  with pytest.raises(ValueError, match="unknown method 'nope'"):
    registry.get_method("nope")


def test_a_signal_after_done_exits_zero(tmp_path, compile_cache):
  # The run is complete once `done:` is printed: a scheduler's signal in the interpreter's
  # teardown that follows must not turn it into a failure (exit 143 / 130).
  import signal

  proc = subprocess.Popen(
    strict_python(
      "experiments.main",
      f"--config={os.path.join(REPO, 'experiments/configs/toy/regression.py')}:smoke",
      f"--workdir={tmp_path / 'w'}",
      "--config.progress_bar=False",
    ),
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    text=True,
    cwd=REPO,
    env=subprocess_env(JAX_COMPILATION_CACHE_DIR=compile_cache),
  )
  seen = []
  for line in proc.stderr:
    seen.append(line)
    if line.startswith("done: "):
      proc.send_signal(signal.SIGTERM)
      break
  rest = proc.stderr.read()
  assert proc.wait(timeout=120) == 0, "".join(seen) + rest
  assert any(ln.startswith("done: ") for ln in seen), "".join(seen) + rest
