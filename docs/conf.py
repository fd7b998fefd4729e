"""Sphinx configuration of the iclr26_jax documentation (`make docs`).

Offline by design: no intersphinx, no notebook execution (the notebooks in ``colabs/`` are rendered
with the outputs stored in them), no remote assets. Warnings are errors (``-W --keep-going`` in the
Makefile) and cross-references inside the project are checked (``nitpicky``); names of other
libraries (jax, flax, optax, numpy, ...) that appear in signatures are ignored below, since
without intersphinx they cannot resolve.
"""

import os
import shutil
import sys

DOCS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(DOCS)
sys.path.insert(0, REPO)
os.environ.setdefault("JAX_PLATFORMS", "cpu")

project = "iclr26_jax"
author = "iclr26_jax contributors"
copyright = "2026, iclr26_jax contributors"
release = "0.1.0"

extensions = [
  "sphinx.ext.autodoc",
  "sphinx.ext.autosummary",
  "sphinx.ext.napoleon",
  "sphinx.ext.mathjax",
  "sphinx_copybutton",
  "myst_nb",
]

# Markdown pages (MyST) and notebooks (myst-nb). The notebooks are never executed here: their
# stored outputs are what `tests/test_notebooks.py` checks and what the pages show.
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
nb_execution_mode = "off"
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
# methods/_generated/ holds pieces the method pages include (written below), not pages.
exclude_patterns = [
  "_build",
  "Thumbs.db",
  ".DS_Store",
  "**.ipynb_checkpoints",
  "methods/_generated",
]

# Formulas: the browser loads MathJax (Sphinx's default script address) when the page is opened
# online; offline they show as their TeX source. The build itself downloads nothing.

# Autodoc: Google-style docstrings (napoleon), members in source order, type hints in the
# description rather than in long signatures.
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented"
autodoc_default_options = {"show-inheritance": False}
autodoc_inherit_docstrings = False
autosummary_generate = False
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
napoleon_use_ivar = True
# Flax modules carry dataclass fields (parent, name) that are not part of a layer's interface.
autodoc_mock_imports = []

nitpicky = True
# Types of other libraries (no intersphinx: the build is offline) and typing internals.
nitpick_ignore_regex = [
  (
    r"py:.*",
    r"(jax|jnp|jaxlib|flax|nn|optax|numpy|np|chex|ml_collections|orbax|ocp|distrax|"
    r"scipy|sklearn|ott|diffrax|absl|typing|typing_extensions|collections|dataclasses|"
    r"concurrent|os|pathlib|enum|functools|abc|types|io)(\..*)?",
  ),
  (
    r"py:.*",
    r"(Array|ArrayLike|PRNGKey|PyTree|Pytree|Shape|DType|Dtype|Callable|Any|Optional|"
    r"Sequence|Mapping|Iterable|Iterator|Union|Literal|NamedTuple|Self|ConfigDict|FrozenConfigDict|"
    r"FrozenDict|Module|Variables|Params|KeyArray|Key|ndarray|dtype|float|int|bool|str|dict|"
    r"list|tuple|callable|optional|array|function|object|None|default|DTypeLike|Mesh|"
    r"NamedSharding|Sharding|PartitionSpec|GradientTransformation|Schedule)",
  ),
  # Shape words in Google-style "Args:" types, e.g. "(B, D) float array".
  (r"py:.*", r".*[ ,()\[\]|].*"),
  # A lowercase bare word in a type position is an argument or field name that napoleon read as
  # a type (e.g. a dataclass field listed under "Attributes:"), or prose in a "Raises:" entry;
  # the project's own classes are CamelCase and dotted, and stay checked.
  (r"py:(class|exc|obj)", r"[a-z_][a-z0-9_]*|\.|"),
  # One capital letter, maybe with arithmetic, is a shape symbol ("G", "G+1") in a type position.
  (r"py:class", r"[A-Z]([+\-*/]\w+)?"),
  # Private bases (shown by autodoc for a public subclass) have no page of their own.
  (r"py:class", r".*\._\w+"),
  # Return types of the DSB entry points that live in internal modules (runner, solvers) and
  # are not exported, so they have no page: PresetContext, DLightSBOutput.
  (r"py:class", r"iclr26_jax\.dsb\.(runner|solvers\.\w+)\.\w+"),
  # Exceptions named in "Raises:" sections: the rooms' own exceptions are documented where they
  # are exported; one raised by an internal module (e.g. core.datacheck.DataError) has no page.
  (r"py:exc", r"[A-Za-z_.]*(Error|Exception|Warning)"),
]

html_theme = "sphinx_book_theme"
html_title = "iclr26_jax"
html_static_path = []
html_theme_options = {
  "show_toc_level": 2,
  "navigation_with_keys": False,
  "use_download_button": False,
  "use_fullscreen_button": False,
}
html_last_updated_fmt = None

# The notebooks live in colabs/ (run by the tests, opened on Colab); the site shows copies, taken
# fresh at every build into docs/notebooks/ (ignored by git).
_NB_SRC = os.path.join(REPO, "colabs")
_NB_DST = os.path.join(DOCS, "notebooks")
os.makedirs(_NB_DST, exist_ok=True)
for _name in sorted(os.listdir(_NB_SRC)):
  if _name.endswith(".ipynb"):
    shutil.copyfile(os.path.join(_NB_SRC, _name), os.path.join(_NB_DST, _name))

# API reference: one page per room, written at every build from the room's own ``__all__`` (so a
# new export appears without editing the docs): the room's docstring, its entry points in full
# (those of ENTRY_POINTS that the room exports), then a summary table of every export and each
# export's documentation.
ROOMS = {
  "core": "The training core",
  "nn": "Shared Flax blocks",
  "lmkan": "lmKAN",
  "anybcq": "AnyBCQ",
  "dsb": "DSB (discrete Schrödinger bridges)",
  "pdns": "PDNS",
  "minpv": "MinPV",
  "qam": "QAM",
}
# The library entry points of each method (issue #37): the names a user calls on a problem of
# their own. Shown first on the room's API page, documented in full, when the room exports them.
ENTRY_POINTS = {
  "core": ["train", "Method", "TrainState", "read_jsonl"],
  "nn": [],
  "lmkan": ["LMKANDense", "recipe_optimizer", "hessian_penalty", "two_phase_schedule", "LMKANNet"],
  "anybcq": ["quantize_params", "dequantize_params", "QuantizedParams", "QuantizedDense"],
  "dsb": ["Benchmark", "evaluate", "PRESETS"],
  "pdns": ["fit_sampler", "fit_discrete_sampler", "FittedSampler"],
  "minpv": ["fit_log_ratio", "estimate_mi", "LogRatio"],
  "qam": [
    "train_offline",
    "OfflineAgent",
    "agent_config",
    "check_dataset",
    "resolve_layout",
    "QAMAgent",
  ],
}
_API_DIR = os.path.join(DOCS, "api")


def _write_api_pages():
  import importlib
  import inspect

  os.makedirs(_API_DIR, exist_ok=True)
  for room, title in ROOMS.items():
    mod = importlib.import_module(f"iclr26_jax.{room}")
    names = list(getattr(mod, "__all__", []))
    entry = [n for n in ENTRY_POINTS[room] if n in names]
    rest = [n for n in names if n not in entry]
    # Tables and constants (e.g. ``dsb.PRESETS``) carry their type's docstring; they are listed
    # by name, the functions and classes in a summary table.
    code = [n for n in rest if callable(getattr(mod, n))]
    data = [n for n in rest if n not in code]
    lines = [
      f"{title}: ``iclr26_jax.{room}``",
      "=" * 80,
      "",
      f".. automodule:: iclr26_jax.{room}",
      "   :no-members:",
      "",
      f".. currentmodule:: iclr26_jax.{room}",
      "",
    ]
    if entry:
      lines += ["Entry points", "-" * 80, ""]
      for n in entry:
        obj = getattr(mod, n)
        if inspect.isclass(obj):
          lines += [f".. autoclass:: {n}", "   :members:", ""]
        elif callable(obj):
          lines += [f".. autofunction:: {n}", ""]
        else:
          lines += [f".. py:data:: {n}", "", f"   ``{room}.{n}``: see the room's docstring.", ""]
    if code:
      lines += ["Other exports", "-" * 80, "", ".. autosummary::", "   :nosignatures:", ""]
      lines += [f"   {n}" for n in code] + [""]
      for n in code:
        if inspect.isclass(getattr(mod, n)):
          lines += [f".. autoclass:: {n}", "   :members:", ""]
        else:
          lines += [f".. autofunction:: {n}", ""]
    if data:
      lines += ["Tables and constants: " + ", ".join(f"``{n}``" for n in data) + ".", ""]
    text = "\n".join(lines)
    path = os.path.join(_API_DIR, f"{room}.rst")
    if not os.path.exists(path) or open(path).read() != text:
      with open(path, "w") as f:
        f.write(text)


_write_api_pages()

# Method pages: pieces written at every build into docs/methods/_generated/ (ignored by git), so
# the pages follow the code: the method's example script (examples/<method>.py), links to its
# entry points as the room exports them, and its claims as registered in experiments/claims/
# (what is measured, the reference, the pass rule, and the recorded reason beside a FAIL).
METHODS = ["lmkan", "anybcq", "dsb", "pdns", "minpv", "qam"]
_GEN = os.path.join(DOCS, "methods", "_generated")


def _write(path: str, text: str) -> None:
  if not os.path.exists(path) or open(path).read() != text:
    with open(path, "w") as f:
      f.write(text)


def _cell(text) -> str:
  return " ".join(str(text).split()).replace("|", "\\|")


def _write_method_pieces():
  import importlib

  from experiments.claims import all_claims

  os.makedirs(_GEN, exist_ok=True)
  claims = all_claims()
  for m in METHODS + ["core"]:
    # Example script.
    script = os.path.join(REPO, "examples", f"{m}.py")
    if os.path.exists(script):
      text = (
        f"```{{literalinclude}} /../examples/{m}.py\n:language: python\n```\n\n"
        f"Run it from the repository root: `.venv/bin/python examples/{m}.py` (add `--tiny` for "
        "the seconds-long version the test suite runs).\n"
      )
    else:
      text = f"*`examples/{m}.py` is not in this checkout yet.*\n"
    _write(os.path.join(_GEN, f"{m}_example.md"), text)
    # Entry points.
    room = "core" if m == "core" else m
    mod = importlib.import_module(f"iclr26_jax.{room}")
    names = [n for n in ENTRY_POINTS[room] if n in getattr(mod, "__all__", [])]
    items = [f"- {{py:obj}}`iclr26_jax.{room}.{n}`" for n in names]
    text = "\n".join(items) + "\n" if items else "*No entry point exported yet.*\n"
    text += f"\nEvery export of the room: {{doc}}`/api/{room}`.\n"
    _write(os.path.join(_GEN, f"{m}_entry.md"), text)
    # Claims.
    rows = [c for c in claims if c.method == m or c.name.startswith(m + "/")]
    lines = [
      "| claim | what is measured | reference | passes when | why, if it fails |",
      "| --- | --- | --- | --- | --- |",
    ]
    for c in rows:
      rule = f"{'≥' if c.direction == 'higher' else '≤'} {c.threshold:g}"
      reason = c.reason
      lines.append(
        f"| `{c.name}` | {_cell(c.measure)} | {c.reference:g} | "
        f"{rule} | {_cell(reason.cell()) if reason else ''} |"
      )
    _write(os.path.join(_GEN, f"{m}_claims.md"), "\n".join(lines) + "\n")


_write_method_pieces()


# Budget curves (#40): experiments/claims/budget_curves.json, measured by `python -m
# experiments.reproduce --only=CLAIM --budget_curve=...`, shown on the claims page with what each
# curve shows (reasons.curve_trend, the rule the reason classes follow) and its plot.
def _write_budget_curves():
  import json
  import shutil

  from experiments.claims import reasons

  src = os.path.join(REPO, "experiments", "claims")
  out = os.path.join(_GEN, "budget_curves")
  os.makedirs(out, exist_ok=True)
  with open(os.path.join(src, "budget_curves.json")) as f:
    curves = json.load(f)
  lines = []
  for name in sorted(curves):
    curve = curves[name]
    trend, sentence = reasons.curve_trend(curve)
    reason = reasons.REASONS.get(name)
    lines += [f"### `{name}`", "", f"**{trend}** — {sentence}"]
    if reason:
      lines += ["", f"Recorded class: *{reason.cls}* ({_cell(reason.summary)})."]
    if curve.get("note"):
      lines += ["", f"Points: {_cell(curve['note'])}."]
    png = name.replace("/", "__") + ".png"
    if os.path.exists(os.path.join(src, "budget_curves", png)):
      shutil.copyfile(os.path.join(src, "budget_curves", png), os.path.join(out, png))
      lines += [
        "",
        f"```{{image}} /methods/_generated/budget_curves/{png}",
        f":alt: {name}",
        ":width: 520px",
        "```",
      ]
    lines.append("")
  _write(os.path.join(_GEN, "budget_curves.md"), "\n".join(lines))


_write_budget_curves()
