"""The link between a method page's "Accuracy at the defaults" and the tests that hold it (pytest
collects no test here; each ``tests/<method>/test_<method>_contract.py`` calls
``assert_page_cites_existing_tests``)."""

import ast
import os
import re

from tests.conftest import REPO

SECTION = "### Accuracy at the defaults"
CITATION = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def accuracy_section(method: str) -> str:
  """The text of the page's "Accuracy at the defaults" subsection, which must sit under
  "Use it on your own problem"."""
  text = open(os.path.join(REPO, "docs", "methods", f"{method}.md"), encoding="utf-8").read()
  start = text.index("## Use it on your own problem")
  end = text.find("\n## ", start + 1)
  use = text[start : end if end >= 0 else len(text)]
  assert SECTION in use, f"{method}.md: no '{SECTION}' under 'Use it on your own problem'"
  sub = use[use.index(SECTION) + len(SECTION) :]
  nxt = sub.find("\n### ")
  return sub if nxt < 0 else sub[:nxt]


def assert_page_cites_existing_tests(method: str) -> list[tuple[str, str]]:
  """Every ``tests/...py::name`` the subsection cites is a test function of that file (read with
  ``ast``, nothing imported); at least one is cited. Returns the citations."""
  cited = CITATION.findall(accuracy_section(method))
  assert cited, f"{method}.md: '{SECTION}' names no test (`tests/...py::test_name`)"
  for path, name in cited:
    full = os.path.join(REPO, path)
    assert os.path.exists(full), f"{method}.md cites {path}, which does not exist"
    tree = ast.parse(open(full, encoding="utf-8").read())
    tests = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert name.startswith("test_") and name in tests, (
      f"{method}.md cites {path}::{name}: no such test"
    )
  return cited
