"""The documentation site: its sources (every page is where the toctrees say, the six methods each
have a page that shows their entry point and example, the build is offline, the `docs` extra is
pinned, the front pages agree with the README) and, once `make docs` has built it (`make test`
does, before the test tiers; these tests skip without it), the HTML: no raw Markdown, no
development notes on the user pages, nothing loaded from another host, and a layout that fits
the window (tools/check_docs_layout.py, with headless Chromium)."""

import ast
import configparser
import glob
import os
import re
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from tests.conftest import REPO

DOCS = os.path.join(REPO, "docs")
SITE = os.path.join(DOCS, "_build", "html")
METHODS = ("lmkan", "anybcq", "dsb", "pdns", "minpv", "qam")
# The library entry points, by package: the API pages must list them.
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
  for method, name in CONTRACT.items():
    assert name in conf["ENTRY_POINTS"][method], (method, name)


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
            continue  # written by conf.py from each method package's __all__
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


# -- the front pages ------------------------------------------------------------------------------

# The one statement of what has run where; the pages that speak of platforms carry it word for word.
PLATFORMS = (
  "**Platforms.** Everything runs and is tested on CPU. The Pallas kernels are compiled, not run, for "
  "Hopper GPUs (Mosaic GPU, sm_90a: H100 / H200) and for TPU v5e / v6e (Mosaic TPU) in the compile "
  "tier of `make test`, which CI runs; nothing has run on a GPU or TPU chip yet."
)
PLATFORM_PAGES = (
  "README.md",
  "docs/index.md",
  "docs/getting_started.md",
  "docs/kernels.md",
  "docs/scaling.md",
)


def _flat(text: str) -> str:
  return " ".join(text.split())


def _python_blocks(text: str) -> list[str]:
  return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


def test_platform_statement_is_the_same_everywhere():
  for rel in PLATFORM_PAGES:
    text = _flat(open(os.path.join(REPO, rel), encoding="utf-8").read())
    assert PLATFORMS in text, (
      f"{rel}: the platform statement differs from tests/harness/test_docs.PLATFORMS"
    )
    for stale in ("not yet run on a chip", "No line of this project has yet run"):
      assert stale not in text, (rel, stale)


def test_front_pages_show_the_readme_example_and_its_output():
  """docs/index.md and docs/getting_started.md show the README's example (which
  tests/harness/test_readme.py runs) and the line it prints."""
  (readme,) = _python_blocks(open(os.path.join(REPO, "README.md"), encoding="utf-8").read())
  for name in ("index.md", "getting_started.md"):
    text = open(os.path.join(DOCS, name), encoding="utf-8").read()
    assert readme in _python_blocks(text), f"docs/{name}: not the README's example"
    out = re.search(r"^```text\n(train MSE [\d.]+ against Var\(y\) [\d.]+)\n```", text, re.M)
    assert out, f"docs/{name}: the example's printed line is missing"


def test_development_section_is_last():
  text = open(os.path.join(DOCS, "index.md"), encoding="utf-8").read()
  blocks = re.findall(r"```\{toctree\}\n(.*?)```", text, re.S)
  assert blocks[-1].split()[-1] == "development/index"
  dev = open(os.path.join(DOCS, "development", "index.md"), encoding="utf-8").read()
  toc = re.search(r"```\{toctree\}\n(.*?)```", dev, re.S).group(1).split()
  # One page of design notes and measurements per package, each in the development toctree.
  notes = sorted(
    f[:-3] for f in os.listdir(os.path.join(DOCS, "development")) if f.endswith("_notes.md")
  )
  assert notes == sorted(f"{m}_notes" for m in ("core", *METHODS)), notes
  assert set(notes) <= set(toc), set(notes) - set(toc)


# -- the built site -------------------------------------------------------------------------------

# Pages that are not the documentation's prose: Sphinx's indices and search page, viewcode's source
# listings, and the development section (where dates, issue history and CI internals belong).
NOT_USER_PAGES = ("search.html", "genindex.html", "py-modindex.html")
NOT_USER_DIRS = ("_modules", "development")
ASSET_DIRS = ("_static", "_sources", "_downloads", "_images")
# Development notes a reader of the user pages cannot use: references to design documents they do
# not have, the project's internal word for a method package, and issue numbers.
DEV_NOTES = re.compile(
  r"spec §|DESIGN §|\broom\b|(?<![\w&#])#\d+\b|\bissues? #\d+|\bissue \d+\b(?![.,]?\d|-|×)",
  re.IGNORECASE,
)
RAW_TABLE_ROW = re.compile(r"\|\s*:?-{3,}")
REMOTE_ASSET = re.compile(
  r"<(?:script|img)\b[^>]*\bsrc\s*=\s*[\"']?(?:https?:)?//|<link\b[^>]*\bhref\s*=\s*[\"']?(?:https?:)?//",
  re.IGNORECASE,
)


def _built():
  if not os.path.exists(os.path.join(SITE, "index.html")):
    pytest.skip("the site is not built (make docs)")


def _pages():
  for path in sorted(glob.glob(os.path.join(SITE, "**", "*.html"), recursive=True)):
    rel = os.path.relpath(path, SITE)
    if rel.split(os.sep)[0] not in ASSET_DIRS:
      yield rel, path


def _user_pages():
  for rel, path in _pages():
    if rel not in NOT_USER_PAGES and rel.split(os.sep)[0] not in NOT_USER_DIRS:
      yield rel, path


class _Text(HTMLParser):
  """The article's text, less code blocks (``<pre>``), scripts and styles; and each ``<p>``'s."""

  def __init__(self):
    super().__init__(convert_charrefs=True)
    self.skip = 0
    self.in_p = 0
    self.parts, self.paragraphs = [], []

  def handle_starttag(self, tag, attrs):
    if tag in ("pre", "script", "style"):
      self.skip += 1
    elif tag == "p":
      self.in_p += 1
      self.paragraphs.append("")

  def handle_endtag(self, tag):
    if tag in ("pre", "script", "style"):
      self.skip -= 1
    elif tag == "p":
      self.in_p = max(0, self.in_p - 1)

  def handle_data(self, data):
    if self.skip:
      return
    self.parts.append(data)
    if self.in_p:
      self.paragraphs[-1] += data


def _article(path):
  text = open(path, encoding="utf-8").read()
  start, end = text.find("<article"), text.rfind("</article>")
  parser = _Text()
  parser.feed(text[start:end] if start >= 0 and end > start else text)
  return " ".join(" ".join(parser.parts).split()), parser.paragraphs


def test_api_pages_show_clean_signatures_with_source_links():
  """Signatures as a reader writes them (no Flax plumbing, no class reprs, no private jax
  modules), every package's page present (the kernels' included) and [source] links (viewcode)."""
  _built()
  pages = sorted(glob.glob(os.path.join(SITE, "api", "*.html")))
  names = {os.path.basename(p)[:-5] for p in pages}
  assert {"core", "nn", "kernels_pallas", *METHODS} <= names, names
  for path in pages:
    text = open(path, encoding="utf-8").read()
    for bad in (
      "_Sentinel",
      "&lt;class &#39;",
      "<class '",
      "jaxlib._jax",
      "jax._src",
      "object at 0x",
    ):
      assert bad not in text, (os.path.basename(path), bad)
    if not path.endswith("index.html"):
      assert "viewcode-link" in text, f"{os.path.basename(path)}: no [source] links"


def test_no_raw_markdown_table_in_a_paragraph():
  """A Markdown table that did not render (a notebook's markdown output read as CommonMark, a
  table without its blank line) shows as a paragraph of pipes."""
  _built()
  hits = []
  for rel, path in _pages():
    for para in _article(path)[1]:
      if RAW_TABLE_ROW.search(para):
        hits.append(f"{rel}: {' '.join(para.split())[:100]}")
  assert not hits, "raw Markdown table rows:\n" + "\n".join(hits)


def test_user_pages_hold_no_development_notes():
  """No "spec §" / "DESIGN §" (documents a reader does not have), no "room" (say "method
  package"), no issue numbers: they belong on the development pages. Code blocks are not read."""
  _built()
  hits = []
  for rel, path in _user_pages():
    text = _article(path)[0]
    for m in DEV_NOTES.finditer(text):
      hits.append(f"{rel}: ...{text[max(0, m.start() - 50) : m.end() + 30]}...")
  assert not hits, "development notes on user pages:\n" + "\n".join(hits)


def test_dev_notes_pattern():
  bad = ["see spec §7", "DESIGN §2.1", "the room has", "The Room", "(#31)", "issue #34", "issue 12"]
  good = [
    "--rooms",
    "bedrooms",
    "issue 33.4 T thread-instructions/s",
    "issues 8 ops",
    "ops issue 6-8× faster",
    "C# 12",
    "&#39;",
  ]
  assert all(DEV_NOTES.search(s) for s in bad)
  assert not any(DEV_NOTES.search(s) for s in good), [s for s in good if DEV_NOTES.search(s)]


def test_nothing_is_loaded_from_another_host():
  """Scripts, styles and images come from the site itself (MathJax included): it works offline."""
  _built()
  hits = []
  for rel, path in _pages():
    for m in REMOTE_ASSET.finditer(open(path, encoding="utf-8").read()):
      hits.append(f"{rel}: {m.group(0)[:120]}")
  for path in glob.glob(os.path.join(SITE, "_static", "**", "*.css"), recursive=True):
    css = open(path, encoding="utf-8", errors="replace").read()
    for m in re.finditer(r"(?:url\(|@import)\s*[\"']?(?:https?:)?//[^)\"'\s]*", css):
      hits.append(f"{os.path.relpath(path, SITE)}: {m.group(0)[:120]}")
  assert not hits, "remote assets:\n" + "\n".join(hits)
  math = [rel for rel, path in _pages() if "tex-chtml.js" in open(path, encoding="utf-8").read()]
  assert math, "no page loads MathJax: is the site built with sphinx-mathjax-offline?"
  assert os.path.exists(os.path.join(SITE, "_static", "mathjax", "tex-chtml.js"))


def test_notebook_markdown_outputs_render_tables():
  """myst-nb renders a cell's text/markdown output as GitHub-flavoured Markdown (a table is a
  table): the DSB notebook prints its results as one."""
  _built()
  page = os.path.join(SITE, "notebooks", "dsb.html")
  assert "<table" in open(page, encoding="utf-8").read()


@pytest.mark.slow
def test_layout_fits_the_window():
  """The index, the claims page and a method page at 1280 and 420 px: no sideways scrolling,
  nothing out of the content column, the text's tables fitting at 1280 px
  (tools/check_docs_layout.py, which checks every page when run by hand; skipped without
  Chromium)."""
  _built()
  sys.path.insert(0, os.path.join(REPO, "tools"))
  try:
    import check_docs_layout
  finally:
    sys.path.pop(0)
  if check_docs_layout.find_chromium() is None:
    pytest.skip("no chromium, chromium-browser or google-chrome on PATH")
  proc = subprocess.run(
    [
      sys.executable,
      os.path.join(REPO, "tools", "check_docs_layout.py"),
      *(os.path.join(SITE, page) for page in ("index.html", "claims.html", "methods/qam.html")),
    ],
    capture_output=True,
    text=True,
    timeout=1200,
  )
  assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
  assert "0 problems" in proc.stdout, proc.stdout[-2000:]
