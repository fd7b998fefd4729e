"""The README's commands run as written for a new user: the environment's Python, and every
quick-tour line says how long it takes."""

import os
import re

from tests.conftest import REPO


def _blocks(text):
  return re.findall(r"```\n(.*?)```", text, re.S)


def test_quick_tour_lines_use_the_venv_and_carry_a_time():
  text = open(os.path.join(REPO, "README.md")).read()
  tours = re.findall(r"### \w[^\n]* quick tour\n(.*?)(?=\n### |\n## )", text, re.S)
  assert len(tours) >= 3
  commands = []
  for tour in tours:
    for block in _blocks(tour):
      lines = block.splitlines()
      for i, line in enumerate(lines):
        if i and lines[i - 1].rstrip().endswith("\\"):
          continue  # continuation of the previous command
        commands.append(line if not line.rstrip().endswith("\\") else line + lines[i + 1])
  assert commands
  for cmd in commands:
    assert cmd.startswith(".venv/bin/python "), cmd
    comment = cmd.split("#", 1)[1] if "#" in cmd else ""
    assert re.search(r"(\bt \d|≈\d|~\d|not timed here|hours on a CPU|>\d+ min)", comment), cmd


def test_no_bare_python_in_command_blocks():
  text = open(os.path.join(REPO, "README.md")).read()
  for block in _blocks(text):
    for line in block.splitlines():
      assert not re.match(r"\s*python3? -m ", line), line
