"""The library holds methods, ``experiments/`` holds experiments and ``benchmarks/`` the timings: no
module under ``iclr26_jax/`` imports ``experiments`` or ``benchmarks``, writes a report file or
prints a table.

Oracle: the modules' syntax trees. Files are written only by the training core, into the run's
own workdir (checkpoints, config.json, metrics.jsonl, the lock), and by one plotting helper that
saves to the path its caller names.
"""

import ast
import glob
import os

from tests.conftest import REPO

# Top-level packages that run from the repository root and are never installed (setup.cfg).
NOT_INSTALLED = ("experiments", "benchmarks")

# Modules that write files, and why that is not a report.
WRITERS = {
  "iclr26_jax/core/checkpoint.py": "the run's checkpoint digests",
  "iclr26_jax/core/config.py": "the run's config.json",
  "iclr26_jax/core/metrics.py": "the run's metrics.jsonl",
  "iclr26_jax/core/trainer.py": "the run's event lines",
  "iclr26_jax/core/workdir.py": "the run's lock and config history",
  "iclr26_jax/minpv/analysis.py": "plot_schedules saves a figure where its caller says",
}


def _modules():
  for path in sorted(glob.glob(os.path.join(REPO, "iclr26_jax", "**", "*.py"), recursive=True)):
    rel = os.path.relpath(path, REPO).replace(os.sep, "/")
    with open(path, encoding="utf-8") as f:
      yield rel, ast.parse(f.read())


def _name(func) -> str | None:
  if isinstance(func, ast.Name):
    return func.id
  return func.attr if isinstance(func, ast.Attribute) else None


def _writes(node: ast.Call) -> bool:
  name = _name(node.func)
  if name in ("savefig", "dump", "write_text", "write_bytes", "to_csv"):
    return True
  if name != "open":
    return False
  mode = node.args[1] if len(node.args) > 1 else None
  for k in node.keywords:
    mode = k.value if k.arg == "mode" else mode
  return isinstance(mode, ast.Constant) and any(c in str(mode.value) for c in "wax")


def _prints_a_table(node: ast.Call) -> bool:
  if _name(node.func) != "print":
    return False
  text = " ".join(ast.unparse(a) for a in node.args)
  return "table" in text.lower()


def _findings(tree) -> list[tuple[int, str]]:
  out = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      for a in node.names:
        if a.name.split(".")[0] in NOT_INSTALLED:
          out.append((node.lineno, f"imports {a.name.split('.')[0]}"))
    if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in NOT_INSTALLED:
      out.append((node.lineno, f"imports {node.module.split('.')[0]}"))
    if isinstance(node, ast.Call) and _writes(node):
      out.append((node.lineno, "writes a file"))
    if isinstance(node, ast.Call) and _prints_a_table(node):
      out.append((node.lineno, "prints a table"))
  return out


def test_the_checks_catch_what_they_should():
  bad = ast.parse(
    "import experiments.reproduce\nfrom experiments import claims\nfrom benchmarks import _timing\n"
    "open(p, 'w')\nopen(p, mode='a')\nfig.savefig(p)\njson.dump(x, f)\nprint(result['table'])\n"
  )
  assert [why for _, why in _findings(bad)] == [
    "imports experiments",
    "imports experiments",
    "imports benchmarks",
    "writes a file",
    "writes a file",
    "writes a file",
    "writes a file",
    "prints a table",
  ]
  good = ast.parse(
    "open(p)\nopen(p, 'rb')\nprint('step', 3)\nimport jax\nfrom iclr26_jax import core\n"
  )
  assert _findings(good) == []


def test_no_library_module_imports_experiments_or_benchmarks_writes_reports_or_prints_tables():
  hits = []
  for rel, tree in _modules():
    for line, why in _findings(tree):
      if why == "writes a file" and rel in WRITERS:
        continue
      hits.append(f"{rel}:{line}: {why}")
  assert not hits, "\n".join(hits)
  assert all(os.path.exists(os.path.join(REPO, p)) for p in WRITERS), "a WRITERS entry is stale"
