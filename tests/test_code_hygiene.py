"""The library's comments and docstrings state contracts, not history: no section numbers of
documents a reader of a clone does not have ("spec §3", "DESIGN §4"), no issue numbers ("(#40)"),
no dates ("2026-12-02"), and none of the old in-house words for a method package ("room") or an
entry point ("front door"). Measurements and history belong in docs/development/code_notes.md
and the git log."""

import glob
import os
import re

from tests.conftest import REPO

ROOTS = ("iclr26_jax", "kernels_pallas")
PATTERN = re.compile(
  r"spec §|DESIGN §|#[0-9]{2}\b|20[0-9]{2}-[01][0-9]-[0-3][0-9]|\broom\b|front door"
)


def _files():
  for root in ROOTS:
    yield from sorted(glob.glob(os.path.join(REPO, root, "**", "*.py"), recursive=True))


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
    "(state the contract in plain words; measurements go to docs/development/code_notes.md):\n"
    + "\n".join(hits)
  )
