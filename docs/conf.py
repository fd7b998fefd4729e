"""Sphinx configuration of the iclr26_jax documentation (`make docs`).

Offline by design: no intersphinx, no notebook execution (the notebooks in ``colabs/`` are rendered
with the outputs stored in them), no remote assets. Warnings are errors (``-W --keep-going`` in the
Makefile) and cross-references inside the project are checked (``nitpicky``); names of other
libraries (jax, flax, optax, numpy, ...) that appear in signatures are ignored below, since
without intersphinx they cannot resolve.
"""

import os
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
  # MathJax 3 served from the built site (_static/mathjax/), not from a CDN.
  "sphinx-mathjax-offline",
  "sphinx.ext.viewcode",
  "sphinx_copybutton",
  "myst_nb",
]

# Markdown pages (MyST) and notebooks (myst-nb). The notebooks are never executed here: their
# stored outputs are what `tests/harness/test_notebooks.py` checks and what the pages show.
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
nb_execution_mode = "off"
nb_merge_streams = True
# Markdown outputs (a results table printed by a cell) as GitHub-flavoured Markdown, whose tables
# render as tables; myst-nb's default, CommonMark, has no tables and shows the raw pipes.
nb_render_markdown_format = "gfm"
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

# Formulas: MathJax 3 ships with the site. The sphinx-mathjax-offline package (pinned in the
# `docs` extra) copies its bundled MathJax into _static/mathjax/ after the build; the pages load it
# from there, so formulas render with no network. The build itself downloads nothing.
mathjax_path = "mathjax/tex-chtml.js"

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
  # Return types of the DSB entry points that live in internal modules (evaluation,
  # solvers) and are not exported, so they have no page: PresetContext, DLightSBOutput.
  (r"py:class", r"iclr26_jax\.dsb\.(evaluation|solvers\.\w+)\.\w+"),
  # The block plan that kernels_pallas.spline_lookup.plan returns (a NamedTuple of its blocks
  # module, not exported).
  (r"py:class", r"kernels_pallas\.spline_lookup\.blocks\.Plan"),
  # Exceptions named in "Raises:" sections: the packages' own exceptions are documented where they
  # are exported; one raised by an internal module (e.g. core.datacheck.DataError) has no page.
  (r"py:exc", r"[A-Za-z_.]*(Error|Exception|Warning)"),
]

html_theme = "sphinx_book_theme"
html_title = "iclr26_jax"
# _static/layout.css: wide tables and code scroll inside their box, long cells and signatures
# wrap, so no page scrolls sideways (tools/check_docs_layout.py checks it at 1280 and 420 px).
html_static_path = ["_static"]
html_css_files = ["layout.css"]
html_theme_options = {
  "show_toc_level": 2,
  "navigation_with_keys": False,
  "use_download_button": False,
  "use_fullscreen_button": False,
}
html_last_updated_fmt = None

# The notebooks live in colabs/ (run by the tests, opened on Colab); the site shows copies, taken
# fresh at every build into docs/notebooks/ (ignored by git). In the copies the "Open in Colab"
# badge cell (a remote image and a link to Colab's start page: the repository has no public
# address yet) becomes a download link to the notebook itself; its "Stored outputs" line stays.
_NB_SRC = os.path.join(REPO, "colabs")
_NB_DST = os.path.join(DOCS, "notebooks")
_BADGE_MARK = "<!-- colab-badge -->"


def _site_copy(name: str) -> str:
  import json

  with open(os.path.join(_NB_SRC, name), encoding="utf-8") as f:
    nb = json.load(f)
  for cell in nb["cells"]:
    src = cell.get("source", "")
    src = "".join(src) if isinstance(src, list) else src
    if cell.get("cell_type") == "markdown" and src.startswith(_BADGE_MARK):
      stored = src.split("\n\n", 1)[1] if "\n\n" in src else ""
      cell["source"] = (
        f"{{download}}`Download this notebook <../../colabs/{name}>` (`colabs/{name}` in the "
        "repository) to run it in Jupyter, or upload it to Colab (File → Upload notebook) and run "
        "the setup cell below first." + (f"\n\n{stored}" if stored else "")
      )
  return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


os.makedirs(_NB_DST, exist_ok=True)
for _name in sorted(os.listdir(_NB_SRC)):
  if _name.endswith(".ipynb"):
    _text = _site_copy(_name)
    _dst = os.path.join(_NB_DST, _name)
    if not os.path.exists(_dst) or open(_dst, encoding="utf-8").read() != _text:
      with open(_dst, "w", encoding="utf-8") as _f:
        _f.write(_text)

# API reference: one page per package (a method package, the core, the shared blocks), written at
# every build from the package's own ``__all__`` (so a new export appears without editing the
# docs): the package's docstring, its entry points in full (those of ENTRY_POINTS it exports),
# then a summary table of every export and each export's documentation.
PACKAGES = {
  "core": "The training core",
  "nn": "Shared Flax blocks",
  "lmkan": "lmKAN",
  "anybcq": "AnyBCQ",
  "dsb": "DSB (discrete Schrödinger bridges)",
  "pdns": "PDNS",
  "minpv": "MinPV",
  "qam": "QAM",
}
# The library entry points of each method: the names a user calls on a problem of their own.
# Shown first on the package's API page, documented in full, when the package exports them.
ENTRY_POINTS = {
  "core": ["train", "Method", "TrainState", "read_jsonl"],
  "nn": [],
  "lmkan": ["LMKANDense", "recipe_optimizer", "hessian_penalty", "two_phase_schedule", "LMKANNet"],
  "anybcq": ["quantize_params", "dequantize_params", "QuantizedParams", "QuantizedDense"],
  "dsb": ["Benchmark", "evaluate", "reference_scores", "PRESETS"],
  "pdns": ["fit_sampler", "fit_discrete_sampler", "FittedSampler"],
  "minpv": ["fit_log_ratio", "estimate_kl", "estimate_mi", "LogRatio", "KLEstimate"],
  "qam": [
    "train_offline",
    "OfflineAgent",
    "make_agent_config",
    "check_dataset",
    "auto_reward_scale",
    "CPU_CONFIG",
    "resolve_layout",
    "QAMAgent",
  ],
}
_API_DIR = os.path.join(DOCS, "api")


def _plain_signature(obj) -> str:
  """``obj``'s call signature without annotations (the page shows types in the description)."""
  import inspect

  sig = inspect.signature(obj)
  params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
  return str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))


def _write_api_pages():
  import importlib
  import inspect

  os.makedirs(_API_DIR, exist_ok=True)
  for pkg, title in PACKAGES.items():
    mod = importlib.import_module(f"iclr26_jax.{pkg}")
    names = list(getattr(mod, "__all__", []))
    entry = [n for n in ENTRY_POINTS[pkg] if n in names]
    rest = [n for n in names if n not in entry]
    # Tables and constants (e.g. ``dsb.PRESETS``) carry their type's docstring; they are listed
    # by name, the functions and classes in a summary table.
    code = [n for n in rest if callable(getattr(mod, n))]
    data = [n for n in rest if n not in code]
    lines = [
      f"{title}: ``iclr26_jax.{pkg}``",
      "=" * 80,
      "",
      f".. automodule:: iclr26_jax.{pkg}",
      "   :no-members:",
      "",
      f".. currentmodule:: iclr26_jax.{pkg}",
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
          lines += [
            f".. py:data:: {n}",
            "",
            f"   ``{pkg}.{n}``: see the package's docstring above.",
            "",
          ]
    if code:
      lines += ["Other exports", "-" * 80, "", ".. autosummary::", "   :nosignatures:", ""]
      lines += [f"   {n}" for n in code] + [""]
      for n in code:
        obj = getattr(mod, n)
        home = obj.__module__.rsplit(".", 1)[0] if inspect.isclass(obj) else ""
        if home.startswith("kernels_pallas."):
          # A class re-exported from kernels_pallas is documented on the kernels page, its home
          # (two autoclass entries would claim the same canonical name).
          lines += [
            f".. py:class:: {n}{_plain_signature(obj)}",
            "",
            f"   Re-exported from the kernels: :py:class:`{home}.{n}`.",
            "",
          ]
        elif inspect.isclass(obj):
          lines += [f".. autoclass:: {n}", "   :members:", ""]
        else:
          lines += [f".. autofunction:: {n}", ""]
    if data:
      lines += ["Tables and constants: " + ", ".join(f"``{n}``" for n in data) + ".", ""]
    text = "\n".join(lines)
    path = os.path.join(_API_DIR, f"{pkg}.rst")
    if not os.path.exists(path) or open(path).read() != text:
      with open(path, "w") as f:
        f.write(text)


_write_api_pages()

# The Pallas kernels (``kernels_pallas``): one page for both kernel packages, each package's
# docstring, its differentiable op first, then every other export of its ``__all__``.
KERNELS = {
  "bitplane_matmul": ("AnyBCQ bit-plane matmul", ["bitplane_matmul"]),
  "spline_lookup": ("lmKAN spline lookup", ["spline_lookup"]),
}


def _write_kernels_page():
  import importlib
  import inspect

  lines = [
    "Pallas kernels: ``kernels_pallas``",
    "=" * 80,
    "",
    ".. automodule:: kernels_pallas",
    "   :no-members:",
    "",
    "Each kernel package exports one differentiable op, which picks the kernel for the backend it "
    "runs on (``impl='auto'``; the pure-jnp reference on a CPU), and the pieces it is built from. "
    "What each kernel is compiled for and measured on: :doc:`/kernels`.",
    "",
  ]
  for pkg, (title, entry) in KERNELS.items():
    mod = importlib.import_module(f"kernels_pallas.{pkg}")
    names = list(mod.__all__)
    rest = [n for n in names if n not in entry]
    code = [n for n in rest if callable(getattr(mod, n))]
    data = [n for n in rest if n not in code]
    lines += [
      f"{title}: ``kernels_pallas.{pkg}``",
      "-" * 80,
      "",
      f".. automodule:: kernels_pallas.{pkg}",
      "   :no-members:",
      "",
      f".. currentmodule:: kernels_pallas.{pkg}",
      "",
    ]
    for n in entry:
      lines += [f".. autofunction:: {n}", ""]
    if code:
      lines += [".. autosummary::", "   :nosignatures:", ""] + [f"   {n}" for n in code] + [""]
      for n in code:
        kind = "autoclass" if inspect.isclass(getattr(mod, n)) else "autofunction"
        lines += [f".. {kind}:: {n}"] + (["   :members:"] if kind == "autoclass" else []) + [""]
    if data:
      lines += ["Tables: " + ", ".join(f"``{n}``" for n in data) + ".", ""]
  text = "\n".join(lines)
  path = os.path.join(_API_DIR, "kernels_pallas.rst")
  if not os.path.exists(path) or open(path).read() != text:
    with open(path, "w") as f:
      f.write(text)


_write_kernels_page()


# Signatures as a reader writes them. Flax modules are dataclasses whose generated ``__init__``
# ends in ``parent=<flax.linen.module._Sentinel object>, name=None`` (Flax's plumbing, not part of
# a layer's interface); default values that are classes print as ``<class 'jax.numpy.float32'>``;
# jax's array type prints under its private module (``jax.jaxlib._jax.Array``).
_SIG_SUBS = [
  (r"<class '(?:jax\.numpy|jax\._src\.numpy[\w.]*)\.(\w+)'>", r"jnp.\1"),
  (r"<class 'numpy\.(\w+)'>", r"np.\1"),
  (r"<class 'flax\.linen\.[\w.]*?\.(\w+)'>", r"nn.\1"),
  (r"<class '([\w.]+)'>", r"\1"),
  (r"\b(?:jax\.)?jaxlib\._jax\.(?:Array|ArrayImpl)\b", "jax.Array"),
  (r"\bjax\._src\.\w+\.Array\b", "jax.Array"),
]


def _is_flax_module(obj) -> bool:
  try:
    import flax.linen as nn
  except ImportError:  # pragma: no cover
    return False
  return isinstance(obj, type) and issubclass(obj, nn.Module)


def _clean(text):
  import re

  if not text:
    return text
  for pattern, repl in _SIG_SUBS:
    text = re.sub(pattern, repl, text)
  return text


def _process_signature(app, what, name, obj, options, signature, return_annotation):
  import re

  if signature and _is_flax_module(obj):
    signature = re.sub(r",\s*parent=<flax\.linen\.module\._Sentinel object>", "", signature)
    signature = re.sub(r",\s*name=None(?=\)$)", "", signature)
  return _clean(signature), _clean(return_annotation)


def _clean_type_fields(app, doctree):
  """Type names in the parameter lists that autodoc writes from annotations (``jax.Array``)."""
  from docutils import nodes
  from sphinx import addnodes

  for node in list(doctree.findall(nodes.Text)):
    new = _clean(str(node))
    if new != str(node):
      node.parent.replace(node, nodes.Text(new))
  for node in doctree.findall(addnodes.pending_xref):
    target = node.get("reftarget", "")
    new = _clean(target)
    if new != target:
      node["reftarget"] = new


def _process_docstring(app, what, name, obj, options, lines):
  """A shape written ``(*S, G+1)`` (a star-unpacked batch shape) is not reST emphasis."""
  import re

  for i, line in enumerate(lines):
    lines[i] = re.sub(r"\((\*)(?=[A-Za-z_]\w*\s*,)", r"(\\*", line)


def setup(app):
  app.connect("autodoc-process-signature", _process_signature)
  app.connect("autodoc-process-docstring", _process_docstring)
  app.connect("doctree-read", _clean_type_fields)


# Method pages: pieces written at every build into docs/methods/_generated/ (ignored by git), so
# the pages follow the code: the method's example script (examples/<method>.py), links to its
# entry points as the package exports them, and its claims as registered in experiments/claims/
# (what is measured, the reference, the pass rule, and the recorded reason beside a FAIL).
METHODS = ["lmkan", "anybcq", "dsb", "pdns", "minpv", "qam"]
_GEN = os.path.join(DOCS, "methods", "_generated")


def _write(path: str, text: str) -> None:
  if not os.path.exists(path) or open(path).read() != text:
    with open(path, "w") as f:
      f.write(text)


def _cell(text) -> str:
  return " ".join(str(text).split()).replace("|", "\\|")


# One figure per method page: the first stored image of the notebook cell whose source holds the
# marker (the notebooks are executed at their real settings, ``python -m experiments.notebooks
# --execute``), with its caption.
FIGURES = {
  "lmkan": (
    "reference.spline_lookup_xla(pts",
    "The 2-D lookup tables of a trained lmKAN layer (methane regression), one panel per "
    "input pair and output; grid lines at the σ-grid nodes (from the lmKAN notebook).",
  ),
  "anybcq": (
    "shapes = [tuple(",
    "Quantization error and bytes read per bit width for one shared set of binary planes "
    "(from the AnyBCQ notebook).",
  ),
  "dsb": (
    "learned_cond = [conditional(",
    "Conditional plans π*(· | x0) of the D = 2 Gaussian preset: the analytic truth (top) and "
    "DLightSB's (bottom) with their exact KL (from the DSB notebook).",
  ),
  "pdns": (
    'gmm = {"PDNS": run(gmm2d',
    "Samples of the proximal sampler and of the η = ∞ baseline on the 2-D mixture (from the "
    "PDNS notebook).",
  ),
  "minpv": (
    "est = np.asarray(jax.jit(lambda x: estimator.integrate_time_score",
    "Estimated against true log-ratios at held-out points, MinPV's learned path and the fixed "
    "trig path, d = 10 (from the MinPV notebook).",
  ),
  "qam": (
    'ax.set_xlabel("offline updates")',
    "Point-maze success rate over offline updates: QAM, FQL and the BC flow, mean of two seeds "
    "(from the QAM notebook).",
  ),
}

# Seconds of `examples/<method>.py` at its defaults and with `--tiny` (start-up and compiles
# included), each script run one after another on a 2-core CPU (jax 0.12.1).
FULL_SECONDS = {"anybcq": 11, "dsb": 7, "lmkan": 12, "minpv": 58, "pdns": 10, "qam": 29}
TINY_SECONDS = {"anybcq": 10, "dsb": 6, "lmkan": 10, "minpv": 16, "pdns": 8, "qam": 11}


def _notebook_figure(m: str):
  """The PNG bytes of the method's figure cell (None when the notebook stores none)."""
  import base64
  import json

  marker, _ = FIGURES[m]
  with open(os.path.join(REPO, "colabs", f"{m}.ipynb"), encoding="utf-8") as f:
    cells = json.load(f)["cells"]
  for cell in cells:
    if cell["cell_type"] == "code" and marker in "".join(cell["source"]):
      for out in cell.get("outputs", []):
        png = out.get("data", {}).get("image/png")
        if png:
          return base64.b64decode("".join(png) if isinstance(png, list) else png)
  return None


def _recorded_claims() -> dict:
  """``{claim: (ours, verdict)}`` from the recorded table of docs/claims.md (one source)."""
  with open(os.path.join(DOCS, "claims.md"), encoding="utf-8") as f:
    text = f.read().split("## The claims as last recorded")[1].split("\n## ")[0]
  out = {}
  for line in text.splitlines():
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if line.startswith("| ") and "/" in cells[0] and len(cells) > 3:
      out[cells[0]] = (cells[2], cells[3])
  return out


def _write_method_pieces():
  import importlib

  from experiments.claims import all_claims

  os.makedirs(_GEN, exist_ok=True)
  claims = all_claims()
  recorded = _recorded_claims()
  for m in METHODS:
    png = _notebook_figure(m)
    if png is None:
      text = f"*The {m} notebook stores no figure yet: run `python -m experiments.notebooks --execute --only={m}`.*\n"
    else:
      with open(os.path.join(_GEN, f"{m}_figure.png"), "wb") as f:
        f.write(png)
      text = (
        f"```{{figure}} /methods/_generated/{m}_figure.png\n:width: 100%\n\n{FIGURES[m][1]}\n```\n"
      )
    _write(os.path.join(_GEN, f"{m}_figure.md"), text)
  for m in METHODS + ["core"]:
    # Example script.
    script = os.path.join(REPO, "examples", f"{m}.py")
    if os.path.exists(script):
      text = (
        f"```{{literalinclude}} /../examples/{m}.py\n:language: python\n```\n\n"
        f"Run it from the repository root: `.venv/bin/python examples/{m}.py`"
        + (f" (about {FULL_SECONDS[m]} s on a 2-core CPU)" if m in FULL_SECONDS else "")
        + "; add `--tiny` for the short version the test suite runs"
        + (f" (about {TINY_SECONDS[m]} s)" if m in TINY_SECONDS else "")
        + ".\n"
      )
    else:
      text = f"*`examples/{m}.py` is not in this checkout yet.*\n"
    _write(os.path.join(_GEN, f"{m}_example.md"), text)
    # Entry points.
    pkg = "core" if m == "core" else m
    mod = importlib.import_module(f"iclr26_jax.{pkg}")
    names = [n for n in ENTRY_POINTS[pkg] if n in getattr(mod, "__all__", [])]
    items = [f"- {{py:obj}}`iclr26_jax.{pkg}.{n}`" for n in names]
    text = "\n".join(items) + "\n" if items else "*No entry point exported yet.*\n"
    text += f"\nEvery export of the package: {{doc}}`/api/{pkg}`.\n"
    _write(os.path.join(_GEN, f"{m}_entry.md"), text)
    # Claims.
    rows = [c for c in claims if c.method == m or c.name.startswith(m + "/")]
    lines = [
      "| claim | what is measured | reference | passes when | ours (last recorded) | why, if it "
      "fails |",
      "| --- | --- | --- | --- | --- | --- |",
    ]
    for c in rows:
      rule = f"{'≥' if c.direction == 'higher' else '≤'} {c.threshold:g}"
      reason = c.reason
      ours, verdict = recorded.get(c.name, ("–", ""))
      lines.append(
        f"| `{c.name}` | {_cell(c.measure)} | {c.reference:g} | {rule} | {ours} {verdict} | "
        f"{_cell(reason.cell()) if reason and verdict != 'PASS' else ''} |"
      )
    _write(os.path.join(_GEN, f"{m}_claims.md"), "\n".join(lines) + "\n")


_write_method_pieces()


def _undated(note: str) -> str:
  """A curve's note without its measurement dates (kept in budget_curves.json and on the
  development page): "(2 CPU cores; 2x and 4x measured 2026-12-06)" -> "(2 CPU cores)"."""
  import re

  note = re.sub(r"^points\s+", "", note.strip())
  note = re.sub(r"[;,]?\s*[^;,()]*\d{4}-\d{2}-\d{2}[^;,()]*", "", note)
  return re.sub(r"\(\s*[;,]\s*", "(", note)


# Budget curves: results/budget_curves.json, measured by `python -m
# experiments.reproduce --only=CLAIM --budget_curve=...`, shown on the claims page with what each
# curve shows (reasons.curve_trend, the rule the reason classes follow) and its plot.
def _write_budget_curves():
  import json
  import shutil

  from experiments.claims import reasons

  src = os.path.join(REPO, "results")
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
      lines += ["", f"Points: {_cell(_undated(curve['note']))}."]
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
