"""The documentation site's sources (no build here: `make docs` builds it in `make test`, with
warnings as errors): every page is where the toctrees say, the six methods each have a page that
shows their entry point and example, the build is offline, and the `docs` extra is pinned."""

import ast
import configparser
import os
import re

from tests.conftest import REPO

DOCS = os.path.join(REPO, "docs")
METHODS = ("lmkan", "anybcq", "dsb", "pdns", "minpv", "qam")
# The library entry points of issue #37, by room: the API pages must list them.
CONTRACT = {
  "lmkan": "LMKANDense",
  "anybcq": "quantize_params",
  "dsb": "evaluate",
  "pdns": "fit_sampler",
  "minpv": "fit_log_ratio",
  "qam": "train_offline",
}


def _conf_assignments():
  tree = ast.parse(open(os.path.join(DOCS, "conf.py")).read())
  out = {}
  for node in tree.body:
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
      target = node.targets[0]
      if isinstance(target, ast.Name):
        try:
          out[target.id] = ast.literal_eval(node.value)
        except ValueError:
          pass
  return out


def test_conf_is_offline_and_strict():
  conf = _conf_assignments()
  assert conf["nitpicky"] is True
  assert conf["nb_execution_mode"] == "off"  # notebooks shown with their stored outputs
  exts = conf["extensions"]
  assert "sphinx.ext.intersphinx" not in exts  # no inventory downloads
  assert {"sphinx.ext.autodoc", "sphinx.ext.napoleon", "myst_nb"} <= set(exts)
  for room, name in CONTRACT.items():
    assert name in conf["ENTRY_POINTS"][room], (room, name)


def test_every_toctree_entry_exists():
  for dirpath, _, names in os.walk(DOCS):
    if "_build" in dirpath or "_generated" in dirpath:
      continue
    for name in names:
      if not name.endswith(".md"):
        continue
      text = open(os.path.join(dirpath, name)).read()
      for block in re.findall(r"```\{toctree\}\n(.*?)```", text, re.S):
        for entry in block.splitlines():
          entry = entry.strip()
          if not entry or entry.startswith(":"):
            continue
          base = os.path.join(dirpath, entry)
          if entry.startswith("notebooks/"):  # copied from colabs/ at build time
            src = os.path.join(REPO, "colabs", os.path.basename(entry) + ".ipynb")
            assert os.path.exists(src), f"{name}: {entry} has no colabs/ notebook"
          elif entry.startswith("api/") or os.path.basename(dirpath) == "api":
            continue  # written by conf.py from each room's __all__
          else:
            assert os.path.exists(base + ".md"), f"{name}: toctree entry {entry} is missing"


def test_method_pages_show_entry_point_example_and_claims():
  for m in METHODS:
    text = open(os.path.join(DOCS, "methods", f"{m}.md")).read()
    for section in (
      "## Use it on your own problem",
      "## Run the paper's experiments",
      "## What reproduces and what does not",
    ):
      assert section in text, (m, section)
    for piece in ("entry", "example", "claims"):
      assert f"_generated/{m}_{piece}.md" in text, (m, piece)


def test_docs_extra_is_pinned_and_installed_by_make():
  cfg = configparser.ConfigParser()
  cfg.read(os.path.join(REPO, "setup.cfg"))
  reqs = [r.strip() for r in cfg["options.extras_require"]["docs"].splitlines() if r.strip()]
  names = {re.split(r"[=<>]", r)[0] for r in reqs}
  assert {"sphinx", "sphinx-book-theme", "myst-parser", "myst-nb"} <= names
  assert all("==" in r for r in reqs), reqs
  make = open(os.path.join(REPO, "Makefile")).read()
  # make installs the lock, which `make lock` resolves with the docs extra.
  assert re.search(r'pip install --quiet "\.\[[^]]*\bdocs\b', make)
  assert re.search(r"pip install --quiet --no-deps -r \$\(LOCK\)", make)
  assert re.search(r"sphinx-build -b html -W --keep-going", make)
  test_line = re.search(r"\$\(MAKE\) --no-print-directory (.*?) \|\|", make).group(1).split()
  assert "test-docs" in test_line
