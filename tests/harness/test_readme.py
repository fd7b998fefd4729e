"""The README is a landing page whose commands and example work as written: at most 250 lines,
its Python example runs and fits (an independent check of the printed numbers), its commands use
the environment `make` creates, and its links point at files of the repository."""

import os
import re
import subprocess
import sys

from tests.conftest import REPO, subprocess_env

README = os.path.join(REPO, "README.md")


def _text():
  return open(README, encoding="utf-8").read()


def _blocks(text, lang=None):
  """The fenced code blocks, in order (``lang``: only those opened with ```lang)."""
  blocks, current, opened = [], None, None
  for line in text.splitlines():
    if line.startswith("```"):
      if current is None:
        current, opened = [], line[3:].strip()
      else:
        if lang is None or opened == lang:
          blocks.append("\n".join(current) + "\n")
        current = None
    elif current is not None:
      current.append(line)
  return blocks


def test_readme_is_short():
  n = len(_text().splitlines())
  assert n <= 250, f"README.md has {n} lines; the landing page keeps to 250 (details go in docs/)"


def test_python_example_runs_and_fits(tmp_path):
  (code,) = _blocks(_text(), "python")
  script = tmp_path / "readme_example.py"
  script.write_text(code)
  proc = subprocess.run(
    [sys.executable, str(script)],
    cwd=tmp_path,
    env=subprocess_env(),
    capture_output=True,
    text=True,
    timeout=300,
  )
  assert proc.returncode == 0, proc.stderr
  m = re.fullmatch(r"train MSE ([\d.]+) against Var\(y\) ([\d.]+)\n", proc.stdout)
  assert m, proc.stdout
  mse, var = map(float, m.groups())
  # Oracle: y = sin(x0) cos(x1) on U(-2, 2)^2 has Var(y) = E[sin^2] E[cos^2] - (E sin E cos)^2
  # = (1/2 - sin 4 / 8)(1/2 + sin 4 / 8) - 0 = 0.2410, estimated here from 512 draws.
  assert abs(var - 0.2410) < 0.03
  assert mse < 0.05 * var  # the layer learned the function, not its mean


def test_command_blocks_use_the_venv_or_make():
  for block in _blocks(_text(), lang=""):
    lines = block.splitlines()
    for i, line in enumerate(lines):
      if not line.strip() or line.startswith((" ", "\t")) or (i and lines[i - 1].endswith("\\")):
        continue  # blank, a layout sketch, or a continuation
      first = line.split()[0]
      assert first in (".venv/bin/python", ".venv/bin/tensorboard", "make", "git", "xdg-open") or (
        first.endswith("/") or "/" in first
      ), line
      assert not re.match(r"\s*python3? -m ", line), line


def test_links_point_into_the_repository():
  for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", _text()):
    if "://" in target:
      continue
    assert os.path.exists(os.path.join(REPO, target)), f"README links to a missing file: {target}"


def test_no_hand_set_qam_layout():
  # QAM's loop layout resolves per backend ("auto"); the README must not tell users to set it.
  text = _text()
  assert "critic_loop" not in text and "am_forward" not in text
