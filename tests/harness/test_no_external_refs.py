"""No file of the package, the notebooks or the README points at files outside the repository
(a method note under ``shared/specs/``, ``../shared``, a session's ``/work/`` tree): a reader of a
clone has none of them. Papers and public repositories are cited by name instead."""

import glob
import os
import re

from tests.conftest import REPO

# Folders and files a user of the repository reads.
ROOTS = (
  "iclr26_jax",
  "kernels_pallas",
  "experiments",
  "benchmarks",
  "results",
  "colabs",
  "examples",
  "docs",
)
FILES = ("README.md",)
SUFFIXES = (".py", ".ipynb", ".md", ".rst", ".txt", ".cfg", ".toml")
# `shared/` or `specs/` as the start of a path (not inside a longer path such as XLA's own
# `xla/backends/gpu/target_config/specs/h200.txtpb`, nor a word such as `--workdir=/mnt/shared`
# written as a mount point), and the development machine's tree.
PATTERN = re.compile(r"(\.\./shared\b|(?<![\w/.-])shared/|(?<![\w/.-])specs/[\w-]+\.md|/work/)")


def _files():
  for root in ROOTS:
    for path in glob.glob(os.path.join(REPO, root, "**", "*"), recursive=True):
      rel = os.path.relpath(path, REPO)
      if rel.startswith(os.path.join("docs", "_build")) or "/notebooks/" in "/" + rel:
        continue  # build output and the build's copies of colabs/
      if os.path.isfile(path) and path.endswith(SUFFIXES):
        yield path
  for name in FILES:
    yield os.path.join(REPO, name)


def test_pattern_catches_what_it_should():
  # The oracle for the pattern itself: known bad and good lines.
  bad = [
    "Spec: ``shared/specs/pdns.md`` §2.1",
    "(see specs/anybcq.md section 8)",
    "house plan in ../shared/DESIGN.md",
    "open /work/shared/specs/qam.md",
  ]
  good = [
    "XLA's xla/backends/gpu/target_config/specs/h200.txtpb",
    "--workdir=/mnt/nfs/run1",
    "shared bit-planes, shared by every precision",
    "github.com/ColinQiyangLi/qam",
  ]
  assert all(PATTERN.search(s) for s in bad)
  assert not any(PATTERN.search(s) for s in good)


def test_no_reference_to_files_outside_the_repository():
  hits = []
  for path in _files():
    with open(path, encoding="utf-8", errors="replace") as f:
      for i, line in enumerate(f, 1):
        m = PATTERN.search(line)
        if m:
          hits.append(f"{os.path.relpath(path, REPO)}:{i}: {line.strip()[:120]}")
  assert not hits, "references to files outside the repository:\n" + "\n".join(hits)
