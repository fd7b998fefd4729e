"""The library's comments and docstrings state contracts, not history: no section numbers of
documents a reader of a clone does not have ("spec §3", "DESIGN §4"), no issue numbers ("(#40)"),
no dates ("2026-12-02"), and none of the old in-house words for a method package ("room") or an
entry point ("front door"). Measurements and history belong in docs/development/<package>_notes.md
and the git log.

The experiment scripts, benchmarks and examples (``experiments/**/*.py``, ``benchmarks/**/*.py``,
``examples/**/*.py``) are held to the same rule and a little more: no "issue 32", and none of
"room", "rooms", "door" as whole words. Dates that are data (the budget curves' JSON and the
other generated reports under results/) are not .py files."""

import glob
import os
import re

from tests.conftest import REPO

ROOTS = ("iclr26_jax", "kernels_pallas")
PATTERN = re.compile(
  r"spec §|DESIGN §|#[0-9]{2}\b|20[0-9]{2}-[01][0-9]-[0-3][0-9]|\brooms?\b|\bdoors?\b"
)

SCRIPT_ROOTS = ("experiments", "benchmarks", "examples")
SCRIPT_PATTERN = re.compile(
  r"(?i:spec) §|DESIGN §|(?<![\w&#])#[0-9]{2,}\b|\bissues? #[0-9]+"
  r"|\bissue [0-9]+\b(?![.,]?[0-9]|-|×)|20[0-9]{2}-[01][0-9]-[0-3][0-9]|\brooms?\b|\bdoors?\b"
)


def _files(roots=ROOTS):
  for root in roots:
    yield from sorted(glob.glob(os.path.join(REPO, root, "**", "*.py"), recursive=True))


def _script_hit(line: str) -> bool:
  return bool(SCRIPT_PATTERN.search(line))


def test_pattern_catches_what_it_should():
  # The oracle for the pattern itself: known bad and good lines.
  bad = [
    "see spec §3",
    "the Problem of DESIGN §4",
    "ours before issue (#40)",
    "the kernels issue #18 asked for it",
    "measured 2026-12-02 on the host",
    "like every other method room",
    "The QAM front door: train an agent",
  ]
  good = [
    "Eq. (12) of Li et al., 'Q-learning with Adjoint Matching', ICLR 2026",
    "x = 10",
    "#1 of 3",
    "# 10 critics",
    "Sec. 4.2 of the paper",
    "the 2 × 64 network, 2026 weights",
    "space for [CLS] and [SEP]",
    "a bedroom, a roomy buffer",
    "the entry point of the method package",
    "front-loaded paths",
  ]
  assert all(PATTERN.search(s) for s in bad), [s for s in bad if not PATTERN.search(s)]
  assert not any(PATTERN.search(s) for s in good), [s for s in good if PATTERN.search(s)]


def test_files_are_found():
  files = list(_files())
  assert any(f.endswith(os.path.join("iclr26_jax", "__init__.py")) for f in files)
  assert any(f.endswith(os.path.join("kernels_pallas", "__init__.py")) for f in files)


def test_no_spec_sections_issue_numbers_dates_or_old_words():
  hits = []
  for path in _files():
    with open(path, encoding="utf-8", errors="replace") as f:
      for i, line in enumerate(f, 1):
        if PATTERN.search(line):
          hits.append(f"{os.path.relpath(path, REPO)}:{i}: {line.strip()[:120]}")
  assert not hits, (
    "history or references to documents outside the repository in the library's text "
    "(state the contract in plain words; measurements go to docs/development/<package>_notes.md):\n"
    + "\n".join(hits)
  )


def test_script_pattern_catches_what_it_should():
  bad = [
    "see spec §3",
    "cheaper at equal accuracy. Spec §14 expects no advantage",
    'config="tilt_experiment (spec §14 A)"',
    "the Problem of DESIGN §4",
    "ours before issue (#40)",
    "# --budget=K (#40) scales every solver's step count",
    "the D S^2 K tables before issue #32",
    "the numbers are from issue 33 (the authors' code)",
    "Measured 2026-12-06 on two cores",
    "like every other method room",
    "Method rooms add theirs in experiments/claims/<method>.py",
    "the config's check at the door",
    "The QAM front door: train an agent",
    "python -m benchmarks.device_check --rooms --tiny",
    'flags.DEFINE_list("rooms", list(METHODS), "Subset.", flag_values=fv)',
  ]
  good = [
    "Eq. (12) of Li et al., 'Q-learning with Adjoint Matching', ICLR 2026",
    "x = 10",
    "#1 of 3",
    "# 10 critics",
    "# noqa: BLE001 - one line per cell",
    'colors = ["#1f77b4", "#ff7f0e"]',
    "issue 33.4 T thread-instructions/s",
    "ops issue 6-8× faster; the unit issues 8 ops per cycle",
    "the 2 × 64 network, 2026 weights",
    "a bedroom, a roomy buffer, an outdoor run",
    "the entry point of the method package",
    "python -m benchmarks.device_check --methods --tiny",
    'done = {(r["method"], r["target"]) for r in got}',
  ]
  assert all(_script_hit(s) for s in bad), [s for s in bad if not _script_hit(s)]
  assert not any(_script_hit(s) for s in good), [s for s in good if _script_hit(s)]


def test_script_files_are_found():
  files = list(_files(SCRIPT_ROOTS))
  assert any(f.endswith(os.path.join("experiments", "claims", "reasons.py")) for f in files)
  assert any(
    f.endswith(os.path.join("experiments", "configs", "qam", "pointmaze_qam.py")) for f in files
  )
  assert any(f.endswith(os.path.join("examples", "qam.py")) for f in files)
  assert any(f.endswith(os.path.join("benchmarks", "device_check.py")) for f in files)


def test_scripts_hold_no_spec_sections_issue_numbers_dates_or_old_words():
  hits = []
  for path in _files(SCRIPT_ROOTS):
    with open(path, encoding="utf-8", errors="replace") as f:
      for i, line in enumerate(f, 1):
        if _script_hit(line):
          hits.append(f"{os.path.relpath(path, REPO)}:{i}: {line.strip()[:120]}")
  assert not hits, (
    "history or references to documents outside the repository in experiments/, benchmarks/ or "
    "examples/ (cite the paper, state the fact in plain words, or point to a page under docs/; "
    "measurements and their dates go to docs/development/):\n" + "\n".join(hits)
  )
