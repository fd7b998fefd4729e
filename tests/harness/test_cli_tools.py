"""The small absl tools in ``experiments/`` (AnyBCQ LM / MiniLM / digits, OGBench generation):
flags with help and the old argparse names and defaults, one-line errors, progress and results
files, and the old ``python -m iclr26_jax...`` commands naming the new ones."""

import inspect
import json
import runpy
import subprocess
import sys
import warnings

import pytest
from absl import flags

from experiments import _cli, anybcq_digits_eval, anybcq_lm, anybcq_minilm, ogbench_generate
from tests.conftest import REPO, subprocess_env

# tool -> (old library module, the argparse option names it had)
TOOLS = {
  anybcq_lm: (
    "iclr26_jax.anybcq.lm",
    "steps batch lr width depth heads context group_size rounds symmetric seed out",
  ),
  anybcq_minilm: (
    "experiments.minilm",
    "sentences queries methods bits group_size rounds symmetric k out",
  ),
  anybcq_digits_eval: ("experiments.anybcq_digits", "steps rounds symmetric seeds"),
  ogbench_generate: (
    "iclr26_jax.qam.envs.ogbench_generate",
    "env episodes episode_length dataset_dir seed val_fraction noise p_random_action",
  ),
}
# a bad value for each tool and a piece of its one-line message
BAD = {
  anybcq_lm: ("--steps=abc", "flag --steps=abc"),
  anybcq_minilm: ("--methods=anybcq,nope", "--methods must be a non-empty subset"),
  anybcq_digits_eval: ("--seeds=0", "flag --seeds=0"),
  ogbench_generate: ("--env=cube-double-v0", "env must look like"),
}


def _flags(tool) -> flags.FlagValues:
  fv = flags.FlagValues()
  tool.define_flags(fv)
  return fv


def _short(tool) -> str:
  return tool.__name__.split(".")[-1]


@pytest.mark.parametrize("tool", list(TOOLS), ids=_short)
def test_flags_keep_old_names_have_help_and_match_run_defaults(tool):
  fv = _flags(tool)
  names = TOOLS[tool][1].split()
  assert set(tool.NAMES) == set(names) and set(fv) == set(names)  # defines nothing else
  run_defaults = {k: p.default for k, p in inspect.signature(tool.run).parameters.items()}
  for n in names:
    assert fv[n].help.strip(), f"--{n} has no help text"
    if run_defaults[n] is not inspect.Parameter.empty:
      default = run_defaults[n]
      if isinstance(default, tuple):  # list flags hold strings
        default = [str(d) for d in default]
      assert fv[n].default == default, n


def test_minilm_methods_are_the_library_methods():
  from iclr26_jax.anybcq import lm

  assert anybcq_minilm.ALL_METHODS == lm.METHODS


@pytest.mark.parametrize("tool", list(TOOLS), ids=_short)
def test_help_and_bad_flag_are_one_line(tool):
  cmd = [sys.executable, "-m", tool.__name__]
  out = subprocess.run(
    cmd + ["--help"], capture_output=True, text=True, cwd=REPO, env=subprocess_env(), timeout=60
  )
  assert "Traceback" not in out.stderr
  assert f"python -m {tool.__name__}" in out.stdout  # the usage line from the docstring
  for n in tool.NAMES:
    assert f"--{n}:" in out.stdout or f"--[no]{n}:" in out.stdout
  arg, message = BAD[tool]
  out = subprocess.run(
    cmd + [arg], capture_output=True, text=True, cwd=REPO, env=subprocess_env(), timeout=60
  )
  assert out.returncode == 2 and out.stdout == ""
  assert out.stderr.startswith("error: ") and message in out.stderr, out.stderr
  assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


# The tools whose command line used to live in a library module (``python -m iclr26_jax....``);
# the digits experiment's and the MiniLM model's modules are themselves under experiments/ now.
REDIRECTED = [t for t in TOOLS if TOOLS[t][0].startswith("iclr26_jax.")]


@pytest.mark.parametrize("tool", REDIRECTED, ids=_short)
def test_old_command_names_the_new_one(tool, monkeypatch, capsys):
  old = TOOLS[tool][0]
  monkeypatch.setattr(sys, "argv", [old, "--steps=3", "--out=a b"])
  with warnings.catch_warnings():  # "found in sys.modules": the module is imported already
    warnings.simplefilter("ignore", RuntimeWarning)
    with pytest.raises(SystemExit) as e:
      runpy.run_module(old, run_name="__main__")
  assert e.value.code == 2
  err = capsys.readouterr().err.strip()
  assert len(err.splitlines()) == 1
  assert err.endswith(f"python -m {tool.__name__} --steps=3 '--out=a b'")


def test_library_modules_define_no_flags_and_no_cli():
  import importlib

  before = set(flags.FLAGS)
  for tool, (old, _) in TOOLS.items():
    mod = importlib.import_module(old)
    assert not hasattr(mod, "main"), old
    importlib.import_module(tool.__name__)
  assert set(flags.FLAGS) == before


def test_lm_cli_progress_and_results_file(tmp_path, capsys, monkeypatch):
  # The CLI's plumbing (flags, progress, table, files), not the quantizers (tested on their own):
  # the quantizer is replaced by the identity, which keeps each width's perplexity equal to FP.
  from iclr26_jax.anybcq import lm

  monkeypatch.setattr(lm, "quantize_lm", lambda params, m, bits, *a: {p: params for p in bits})
  out = tmp_path / "res" / "lm"
  fv = _flags(anybcq_lm)
  argv = fv(
    [
      "anybcq_lm",
      "--steps=2",
      "--width=16",
      "--depth=1",
      "--heads=2",
      "--context=16",
      "--rounds=1",
      "--group_size=16",
      f"--out={out}",
    ]
  )
  assert anybcq_lm.main(argv, fv) is None  # app.run exits with main's value: None is status 0
  cap = capsys.readouterr()
  assert "training 2 steps" in cap.err and "rtn: quantizing" in cap.err and "done; wrote" in cap.err
  table = (tmp_path / "res" / "lm.md").read_text()
  assert table.strip() in cap.out  # the same table on stdout and in the file
  rec = json.loads((tmp_path / "res" / "lm.json").read_text())
  assert rec["args"]["steps"] == 2 and rec["args"]["lr"] == 3e-3 and rec["args"]["out"] == str(out)
  assert set(rec["perplexity"]) == set(lm.METHODS) and rec["fp"] > 1.0
  assert set(rec["perplexity"]["anybcq"]) == {"2", "3", "4"}
  assert rec["perplexity"]["rtn"]["2"] == pytest.approx(rec["fp"], rel=1e-6)


def test_results_files(tmp_path):
  _cli.write_results(str(tmp_path / "a" / "m"), "| t |", {"results": {"rtn": {2: {"x": 1.0}}}})
  assert (tmp_path / "a" / "m.md").read_text() == "| t |\n"
  assert json.loads((tmp_path / "a" / "m.json").read_text())["results"]["rtn"]["2"]["x"] == 1.0


def test_quantize_kernels_reports_progress_per_kernel():
  import jax.numpy as jnp

  from iclr26_jax.anybcq import lm

  params = {"params": {"a": {"kernel": jnp.ones((4, 3))}, "b": {"kernel": jnp.ones((4, 2))}}}
  seen = []
  lm.quantize_kernels(
    params, [("a",), ("b",)], "rtn", (2,), group_size=4, progress=lambda i, n: seen.append((i, n))
  )
  assert seen == [(1, 2), (2, 2)]
