"""Executes every notebook in colabs/ headless, in smoke mode (ICLR26_SMOKE=1)."""

import glob
import os

import pytest

from tests.conftest import REPO

NOTEBOOKS = sorted(glob.glob(os.path.join(REPO, "colabs", "*.ipynb")))


@pytest.mark.slow
def test_colabs_exist():
  assert NOTEBOOKS, "colabs/ has no notebooks"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[os.path.basename(p) for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path, monkeypatch):
  import nbformat
  from nbclient import NotebookClient
  monkeypatch.setenv("ICLR26_SMOKE", "1")
  monkeypatch.setenv("JAX_PLATFORMS", "cpu")
  monkeypatch.setenv("XLA_FLAGS", "")
  monkeypatch.setenv("PYTHONPATH", REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
  nb = nbformat.read(path, as_version=4)
  NotebookClient(nb, timeout=900, kernel_name="python3",
                 resources={"metadata": {"path": str(tmp_path)}}).execute()
