"""Checks that built docs pages fit the browser window: no sideways scrolling of the page, nothing
sticking out of the content column (wide code and notebook output tables scroll inside their own
box), and, at 1280 px, every table of the text fitting the column without scrolling.

  .venv/bin/python tools/check_docs_layout.py                      # every page of the built site
  .venv/bin/python tools/check_docs_layout.py docs/_build/html/claims.html ...
  .venv/bin/python tools/check_docs_layout.py --screenshots        # also the screenshots below

Each page is opened by headless Chromium at widths 1280 and 420 px (a laptop and a phone). Since
Chromium's window is at least 500 px wide, the page is shown in an iframe of exactly that width
inside a wrapper page. The page itself is a copy, written to a temporary folder with a ``<base>``
pointing at the original (so its styles and scripts load as on the site), that carries a script
measuring, once the page has loaded, ``document.documentElement.scrollWidth`` against
``window.innerWidth`` (the page scrolls sideways) and the article's ``scrollWidth`` against its
``clientWidth`` (something sticks out of the content column). It posts the numbers to the
wrapper, which writes them into its DOM, which ``--dump-dom`` prints.

``--screenshots`` saves index.html, claims.html and methods/qam.html at both widths into
docs/_build/screenshots/ (the full page height, up to 6000 px).

Exits 1 naming each page and width that overflows, 0 when all fit, and 0 with one line saying
"skipped" when no Chromium is installed (chromium, chromium-browser or google-chrome on PATH).
Reads the site only; builds nothing (`make docs` first).
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SITE = os.path.join(REPO, "docs", "_build", "html")
SHOTS = os.path.join(REPO, "docs", "_build", "screenshots")
WIDTHS = (1280, 420)
HEIGHT = 900
# From this width on, every table fits the content column without scrolling inside its box.
TABLES_FIT = 1280
SCREENSHOT_PAGES = ("index.html", "claims.html", os.path.join("methods", "qam.html"))
# Left out of the default run: the search page and the indices Sphinx writes, and viewcode's
# source listings (_modules/: one page per module, same layout; pass them by name to check them).
SKIP = ("search.html", "genindex.html", "py-modindex.html")
SKIP_DIRS = ("_modules", "_static", "_sources", "_downloads", "_images")

MARK = "docs-layout-check"
# Runs after load (and after MathJax has typeset, within Chromium's virtual time budget).
PROBE = """
<script>
window.addEventListener("load", function () {
  setTimeout(function () {
    var doc = document.documentElement;
    var art = document.querySelector("article.bd-article") || document.querySelector("main");
    var wide = [];
    if (art) {
      var box = art.getBoundingClientRect();
      art.querySelectorAll("*").forEach(function (el) {
        var r = el.getBoundingClientRect();
        if (r.width > 0 && r.right > box.right + 1 && wide.length < 5) {
          // Inside a box that scrolls (a table, code, a formula) it may be wider than the column;
          // such a box itself may not.
          var scroller = el.parentElement && el.parentElement.closest(
            ".pst-scrollable-table-container, .table-wrapper, pre, .highlight, .cell_output, "
            + "mjx-container");
          if (!scroller) {
            wide.push(el.tagName.toLowerCase() + (el.className ? "." + String(el.className)
              .split(" ").join(".") : "") + " (" + Math.round(r.right - box.right) + " px)");
          }
        }
      });
    }
    // Tables of the text that need sideways scrolling inside their container (a notebook's
    // output table is data and may scroll).
    var tables = [];
    document.querySelectorAll("article table").forEach(function (tb) {
      var box = tb.parentElement;
      if (!tb.closest(".cell_output") && tb.offsetWidth > box.clientWidth + 1) {
        var head = tb.querySelector("th, td");
        tables.push((head ? head.textContent.trim().slice(0, 30) : "table") + " ("
          + tb.offsetWidth + " px in " + box.clientWidth + " px)");
      }
    });
    parent.postMessage(JSON.stringify({
      inner: window.innerWidth,
      scroll: doc.scrollWidth,
      height: doc.scrollHeight,
      article: art ? [art.scrollWidth, art.clientWidth] : null,
      wide: wide,
      tables: tables,
    }), "*");
  }, 500);
});
</script>
"""
# The wrapper: the page in an iframe of the width under test; the measurement lands in its DOM.
WRAPPER = """<!DOCTYPE html>
<html><head><style>html, body { margin: 0; padding: 0; } iframe { border: 0; display: block; }
</style></head><body>
<iframe src="%(src)s" style="width: %(width)dpx; height: %(height)dpx;"></iframe>
<script>
window.addEventListener("message", function (e) {
  var out = document.createElement("pre");
  out.id = "%(mark)s";
  out.textContent = e.data;
  document.body.appendChild(out);
});
</script>
</body></html>
"""


def find_chromium():
  for name in ("chromium", "chromium-browser", "google-chrome"):
    path = shutil.which(name)
    if path:
      return path
  return None


def _run(chromium, args, timeout=120):
  cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"] + args
  return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def _wrapped(page: str, tmp: str, width: int, height: int, probe: bool) -> str:
  """The wrapper page in ``tmp`` showing ``page`` (a copy carrying the probe when ``probe``; the
  site's own file otherwise) in an iframe of ``width`` x ``height`` px."""
  src = "file://" + os.path.abspath(page)
  if probe:
    with open(page, encoding="utf-8") as f:
      text = f.read()
    base = f'<base href="file://{os.path.dirname(os.path.abspath(page))}/">'
    text = re.sub(r"<head>", "<head>" + base, text, count=1)
    text = text.replace("</body>", PROBE + "</body>", 1)
    src = os.path.join(tmp, "probe.html")
    with open(src, "w", encoding="utf-8") as f:
      f.write(text)
    src = "file://" + src
  path = os.path.join(tmp, "wrapper.html")
  with open(path, "w", encoding="utf-8") as f:
    f.write(WRAPPER % {"src": src, "width": width, "height": height, "mark": MARK})
  return "file://" + path


def _window(width: int, height: int) -> str:
  return f"--window-size={max(width, 500)},{height}"


def measure(chromium: str, page: str, width: int, tmp: str) -> dict:
  import html

  url = _wrapped(page, tmp, width, HEIGHT, probe=True)
  proc = _run(chromium, [_window(width, HEIGHT), "--virtual-time-budget=5000", "--dump-dom", url])
  m = re.search(rf'<pre id="{MARK}">(.*?)</pre>', proc.stdout, re.S)
  if not m:
    raise RuntimeError(
      f"{page} at {width} px: no measurement (chromium said: {proc.stderr[-500:]})"
    )
  return json.loads(html.unescape(m.group(1)))


def problems(result: dict, width: int) -> list[str]:
  out = []
  if result["scroll"] > result["inner"]:
    out.append(
      f"the page scrolls sideways ({result['scroll']} px wide in a {result['inner']} px window)"
    )
  art = result["article"]
  if art and art[0] > art[1] + 1:
    out.append(f"the content column overflows ({art[0]} px of content in {art[1]} px)")
  if result["wide"]:
    out.append("wider than the column: " + ", ".join(result["wide"]))
  # On a laptop a table of the text fits the column; on a phone it may scroll inside its box.
  if width >= TABLES_FIT and result["tables"]:
    out.append("tables scroll sideways: " + "; ".join(result["tables"]))
  return out


def screenshot(chromium: str, page: str, width: int, height: int, out: str, tmp: str) -> None:
  """A screenshot of the whole page (up to 6000 px tall) at ``width``: the wrapper's iframe is as
  tall as the page, and the shot is cropped to the iframe when the window is wider."""
  height = max(HEIGHT, min(int(height), 6000))
  url = _wrapped(page, tmp, width, height, probe=False)
  _run(chromium, [_window(width, height), "--virtual-time-budget=5000", f"--screenshot={out}", url])
  if width < 500 and os.path.exists(out):
    try:
      from PIL import Image
    except ImportError:  # the shot keeps the wrapper's blank margin on the right
      return
    with Image.open(out) as img:
      img.crop((0, 0, width, img.height)).save(out)


def site_pages(site: str) -> list[str]:
  pages = []
  for path in sorted(glob.glob(os.path.join(site, "**", "*.html"), recursive=True)):
    rel = os.path.relpath(path, site)
    if rel in SKIP or rel.split(os.sep)[0] in SKIP_DIRS:
      continue
    pages.append(path)
  return pages


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("pages", nargs="*", help="built HTML pages (default: every page of the site)")
  parser.add_argument("--screenshots", action="store_true", help=f"save screenshots into {SHOTS}")
  args = parser.parse_args(argv)
  chromium = find_chromium()
  if chromium is None:
    print("check_docs_layout: skipped (no chromium, chromium-browser or google-chrome on PATH)")
    return 0
  pages = args.pages or site_pages(SITE)
  if not pages:
    print(f"check_docs_layout: no pages (build the site first: make docs; looked in {SITE})")
    return 1
  failures = []
  heights = {}
  with tempfile.TemporaryDirectory(prefix="docs-layout-") as tmp:
    for page in pages:
      for width in WIDTHS:
        result = measure(chromium, page, width, tmp)
        heights[(os.path.abspath(page), width)] = result["height"]
        for p in problems(result, width):
          failures.append(f"{os.path.relpath(page, REPO)} at {width} px: {p}")
  if args.screenshots:
    os.makedirs(SHOTS, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="docs-layout-") as tmp:
      for rel in SCREENSHOT_PAGES:
        page = os.path.join(SITE, rel)
        if not os.path.exists(page):
          continue
        for width in WIDTHS:
          height = heights.get((os.path.abspath(page), width))
          if height is None:
            height = measure(chromium, page, width, tmp)["height"]
          out = os.path.join(SHOTS, f"{rel.replace(os.sep, '_')[:-5]}_{width}.png")
          screenshot(chromium, page, width, height, out, tmp)
          print(f"screenshot: {os.path.relpath(out, REPO)}")
  for f in failures:
    print(f"overflow: {f}")
  print(f"check_docs_layout: {len(pages)} pages x {len(WIDTHS)} widths, {len(failures)} problems")
  return 1 if failures else 0


if __name__ == "__main__":
  sys.exit(main())
