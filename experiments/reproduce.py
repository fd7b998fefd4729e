"""The main job: run every registered claim at laptop scale and write ``REPORT.md``.

  python -m experiments.reproduce [--only=METHOD|CLAIM[,...]] [--out=DIR] [--full] [--fresh]
  python -m experiments.reproduce --out=DIR --report_only    # rebuild REPORT.md from results.json
  python -m experiments.reproduce --only=CLAIM --budget=K     # K x the claim's budget
  python -m experiments.reproduce --only=CLAIM --budget_curve=0.5,1,2   # a measured budget curve

Each claim runs in ``<out>/<claim name>/``; the report is a table (claim, reference, ours,
pass/fail, why it fails, seconds, the estimated time of its ``--full`` run on one H200 and on a
TPU v5e-16 slice, and the run it comes from) followed by each claim's details and plots. A claim
that raises is reported as FAIL with its error; the others still run. Exit status 0 when the
report is written (the verdicts are in the report; ``--strict`` exits 1 if any claim of this run
failed).

The output folder accumulates: ``results.json`` keeps the latest row of every claim ever run into
it, each with the UTC date, the git commit it ran at (and whether the tracked tree was dirty; both
taken when the run starts), the scale and the seed, and ``REPORT.md`` is rebuilt from all rows
after every claim. So ``--only=a`` then ``--only=b`` into one folder gives a report holding both,
and a run killed half-way keeps the claims it finished. ``--fresh`` starts the folder's report over. The "why (if
FAIL)" column and the "Authors' code at this budget" paragraphs come from
``experiments/claims/reasons.json``; they never change a verdict.

Interruption and concurrency (docs/runs.md). Ctrl-C or SIGTERM stops the whole job with one line
and exit status 130 / 143; nothing is recorded for the claim it interrupted (a training stopped
early on the signal is never valued), and that claim's previous row and plots stay until a new
measurement of it completes (each claim runs in ``<claim>.partial/`` and replaces its folder only
when done). Running the same command again resumes: claims whose row in the folder was measured at
the same clean commit, scale, seed, budget and package versions are kept (``--redo`` runs them
again) and the interrupted claim's trainings resume from their checkpoints in ``.partial/``. One
job holds an output folder at a time (``<out>/run.lock``, the trainer's workdir lock: a second one
exits at once naming the holder), and ``results.json`` is merged with what is on disk at every write.

Budget. ``--budget=K`` runs each selected claim at K times its budget (what that is, the claim's
``Claim.budget`` says: its step / update counts; a claim without one refuses K != 1); the row's
scale reads ``laptop ×K``. ``--budget_curve=K1,K2,...`` runs every selected claim once per budget
(in ``<out>/budget_<K>/``) and records each point, with its value, the value of each of the claim's
seeds, seconds, commit, dirty flag and date, into ``--curves_file`` (default
``results/budget_curves.json``: ``{claim: {"direction", "threshold", "points": [...]}}``;
a point replaces an earlier one at the same budget) with a plot per claim beside it
(``budget_curves/<claim>.png``); ``REPORT.md`` shows each claim's curve in its section and what
``reasons.curve_trend`` reads from it (toward passing beyond the seed spread, flat or away).
"""

import datetime
import fcntl
import hashlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

from absl import flags, logging

from experiments import _cli

_ONLY = flags.DEFINE_list(
  "only",
  [],
  "Methods or claims to run (e.g. lmkan,dsb or "
  "qam/ogbench_puzzle3x3); default all. An unknown name is an error that "
  "lists the known ones.",
)
_OUT = flags.DEFINE_string("out", "reproduce_out", "Output directory for REPORT.md and plots.")
_FULL = flags.DEFINE_bool("full", False, "Run the larger versions of the claims.")
_SEED = flags.DEFINE_integer("seed", 0, "Seed passed to every claim.")
_STRICT = flags.DEFINE_bool("strict", False, "Exit with status 1 if any claim of this run fails.")
_FRESH = flags.DEFINE_bool(
  "fresh",
  False,
  "Start the report over: drop the rows of earlier runs in --out (default: keep every claim's "
  "latest row and rebuild REPORT.md from all of them).",
)
_REDO = flags.DEFINE_bool(
  "redo",
  False,
  "Run claims again whose row in --out was measured at this clean commit, scale, seed, budget "
  "and package versions (by default a rerun keeps them and runs the rest).",
)
_REPORT_ONLY = flags.DEFINE_bool(
  "report_only", False, "Run nothing: rebuild REPORT.md from --out's results.json."
)
_BUDGET = flags.DEFINE_float(
  "budget",
  1.0,
  "Run each claim at this multiple of its budget (its Claim.budget says what scales: "
  "step / update counts); fractions allowed. A claim without a budget knob refuses K != 1.",
)
_BUDGET_CURVE = flags.DEFINE_list(
  "budget_curve",
  [],
  "Budgets (multiples, e.g. 0.5,1,2) to run every selected claim at, one after another; each "
  "point is recorded into --curves_file with a plot per claim. Excludes --budget.",
)
_CURVE_NOTE = flags.DEFINE_string(
  "curve_note",
  "",
  'With --budget_curve: a note stored as each curve\'s "note" (e.g. why its points sit below 1x).',
)
_CURVES_FILE = flags.DEFINE_string(
  "curves_file",
  None,
  "Budget curves JSON (default results/budget_curves.json in the repository).",
)
_CACHE = flags.DEFINE_string(
  "compile_cache",
  None,
  "JAX persistent compilation cache directory (default <out>/.jax_cache;"
  " '' disables). Runs of the same shapes (seeds, repeated reports) then compile once.",
)

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _fmt(x) -> str:
  if isinstance(x, float):
    return f"{x:.4g}"
  return str(x)


def git_state(repo: str = _REPO) -> dict:
  """``{"commit": full hash or "unknown", "dirty": bool or None}`` of ``repo``'s work tree.

  Dirty means a tracked file differs from the commit (untracked files do not count). Reads
  without taking git's index lock (other work in the tree is never blocked).
  """

  def git(*args):
    return subprocess.run(
      ["git", "--no-optional-locks", "-C", repo, *args],
      capture_output=True,
      text=True,
      timeout=60,
      check=True,
    ).stdout

  try:
    commit = git("rev-parse", "HEAD").strip()
    dirty = bool(git("status", "--porcelain", "--untracked-files=no").strip())
  except (OSError, subprocess.SubprocessError):
    return {"commit": "unknown", "dirty": None}
  return {"commit": commit, "dirty": dirty}


# The packages whose versions every row records: what decides a number besides the code.
VERSIONED = ("jax", "jaxlib", "flax", "optax", "orbax-checkpoint", "numpy")


def stack_versions() -> dict:
  """``{"python": "3.12.1", "jax": "0.12.1", ...}``: the interpreter and the installed versions of
  ``VERSIONED`` ("missing" for one that is not installed)."""
  from importlib import metadata

  out = {"python": platform.python_version()}
  for name in VERSIONED:
    try:
      out[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
      out[name] = "missing"
  return out


def versions_text(v: dict | None) -> str:
  """``"python 3.12.1, jax 0.12.1, ..."``, or "not recorded" for a row without versions."""
  if not v:
    return "not recorded"
  return ", ".join(f"{k} {v[k]}" for k in ("python", *VERSIONED) if k in v)


def run_info(full: bool, seed: int, budget: float = 1.0) -> dict:
  """What every row of one run records about it: UTC date, commit, dirty flag, scale (with
  ``×K`` when ``budget`` K is not 1), seed, budget and the package versions (``stack_versions``)."""
  scale = "full" if full else "laptop"
  return dict(
    date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    **git_state(),
    scale=scale if budget == 1 else f"{scale} ×{budget:g}",
    seed=seed,
    budget=float(budget),
    versions=stack_versions(),
  )


def read_results(out: str) -> list[dict]:
  """The rows of ``<out>/results.json`` ([] when there is none). An unreadable file is moved
  aside to ``results.json.unreadable-<time>`` with a warning, never overwritten."""
  path = os.path.join(out, "results.json")
  if not os.path.exists(path):
    return []
  try:
    with open(path) as f:
      rows = json.load(f)
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "name" in r for r in rows):
      raise ValueError("not a list of claim rows")
    return rows
  except (OSError, ValueError) as e:
    aside = f"{path}.unreadable-{time.strftime('%Y%m%d-%H%M%S')}"
    os.replace(path, aside)
    print(
      f"warning: {path} unreadable ({e}); moved to {aside}, starting a new report", file=sys.stderr
    )
    return []


def merge_rows(previous: list[dict], new: list[dict], order=()) -> list[dict]:
  """Every claim's latest row: ``new`` replaces rows of the same name in ``previous``. Sorted by
  ``order`` (claim names, the registry's order); names not in it follow, first seen first."""
  latest = {r["name"]: r for r in previous}
  latest.update({r["name"]: r for r in new})
  rank = {n: i for i, n in enumerate(order)}
  return sorted(latest.values(), key=lambda r: rank.get(r["name"], len(rank)))


def _run_cell(r: dict) -> str:
  if "commit" not in r:
    return "–"
  commit = r["commit"][:10] + (" dirty" if r.get("dirty") else "")
  jax_v = (r.get("versions") or {}).get("jax")
  stack = f" jax {jax_v}" if jax_v else ""
  return f"{r.get('date', '?')[:10]} {commit} {r.get('scale', '')}{stack}".strip()


def _run_line(r: dict) -> str:
  if "commit" not in r:
    return "- run: not recorded (a row from before runs were recorded)"
  dirty = {True: "dirty tree", False: "clean tree", None: "tree state unknown"}[r.get("dirty")]
  return (
    f"- run: {r.get('date', '?')} at commit `{r['commit']}` ({dirty}), {r.get('scale', '?')} "
    f"scale, seed {r.get('seed', '?')}\n- versions: {versions_text(r.get('versions'))}"
  )


def _atomic_write(path: str, text: str) -> None:
  tmp = f"{path}.tmp-{os.getpid()}"
  with open(tmp, "w") as f:
    f.write(text)
  os.replace(tmp, path)


def write_report(
  out: str,
  rows: list[dict],
  full: bool,
  total_s: float,
  ran: int | None = None,
  curves_file: str | None = None,
) -> str:
  """Writes ``REPORT.md`` and ``results.json`` into ``out`` from ``rows`` (every row the folder
  holds); ``full``, ``total_s`` and ``ran`` (claims run this time, default all rows) describe the
  last run; each claim's section shows its budget curve from ``curves_file`` (default
  ``DEFAULT_CURVES``) when it has one. Returns the report path."""
  from experiments.claims import reasons

  curves = read_curves(DEFAULT_CURVES if curves_file is None else curves_file)
  curve_plots = os.path.splitext(DEFAULT_CURVES if curves_file is None else curves_file)[0]

  ran = len(rows) if ran is None else ran
  n_pass = sum(bool(r["passed"]) for r in rows)
  last = (
    f" Last run: {ran} claim(s) at {'full' if full else 'laptop (default)'} scale, total "
    f"{total_s:.1f} s."
    if ran
    else ""
  )
  lines = [
    "# iclr26_jax reproduce report",
    "",
    f"{len(rows)} claim(s): {n_pass} pass, {len(rows) - n_pass} fail.{last} Each row is its "
    "claim's latest run into this folder (date, commit, scale and jax version in the last "
    "column; every section lists the package versions its row ran with).",
    "",
  ]
  stacks = sorted({versions_text(r.get("versions")) for r in rows})
  if stacks:
    lines += ["Package versions behind these rows:", ""]
    lines += [f"- {s}" for s in stacks] + [""]
  if not rows:
    lines += [
      "No claims are registered yet (or none matched `--only`). Method packages add "
      "theirs in `experiments/claims/<method>.py`.",
      "",
    ]
  else:
    est = reasons.full_run_estimates()
    targets = reasons.ESTIMATE_TARGETS
    lines += [
      'The verdict is the measurement. "why (if FAIL)": *budget* = evidence that the budget '
      "decides it (the authors' code at the same budget, or a measurement showing the "
      "training unfinished, e.g. a convergence column that still moves), *open* = no such "
      "evidence yet; it never turns a FAIL into a pass. `--full` columns: estimated wall time "
      "of the claim's `--full` run (– until an accelerator plan gives it; n/a: the claim has "
      "no `--full` setting).",
      "",
      "| claim | reference | ours | pass | why (if FAIL) | seconds | "
      + " | ".join(f"`--full` on {label}" for _, label in targets)
      + " | run |",
      "| --- | --- | --- | --- | --- | --- | " + "--- | " * len(targets) + "--- |",
    ]
    for r in rows:
      ref = f"{_fmt(r['reference'])} ({r['direction']} than {_fmt(r['threshold'])} passes)"
      cells = [reasons.full_estimate(r["name"], t, est) for t, _ in targets]
      lines.append(
        f"| {r['name']} | {ref} | {_fmt(r['value'])} | "
        f"{'PASS' if r['passed'] else 'FAIL'} | {reasons.why(r)} | {r['seconds']:.1f} | "
        + " | ".join(cells)
        + f" | {_run_cell(r)} |"
      )
    lines.append("")
    for r in rows:
      lines += [
        f"## {r['name']}",
        "",
        f"- config: `{r['config']}`",
        f"- measured: {r['measure']}",
        f"- reference: {_fmt(r['reference'])} — {r['reference_source']}",
        _run_line(r),
      ]
      reason = reasons.REASONS.get(r["name"])
      if not r["passed"]:
        lines.append(f"- why (if FAIL): {reasons.why(r)}")
        if reason and not r.get("error") and r["value"] == r["value"]:
          lines.append(f"  - evidence: {reason.evidence}")
      lines.append("")
      if reason and reason.authors_code:
        lines += [f"**Authors' code at this budget.** {reason.authors_code}", ""]
      if r["name"] in curves:
        lines += curve_section(r["name"], curves[r["name"]], curve_plots, out)
      if r["details"]:
        lines += [r["details"], ""]
      if r.get("error"):
        lines += ["```", r["error"].rstrip(), "```", ""]
      for p in r["plots"]:
        lines.append(f"![{os.path.basename(p)}]({os.path.relpath(p, out)})")
      lines.append("")
  path = os.path.join(out, "REPORT.md")
  _atomic_write(path, "\n".join(lines))
  _atomic_write(os.path.join(out, "results.json"), json.dumps(rows, indent=2))
  return path


def run_claims(
  claims,
  out: str,
  full: bool,
  seed: int,
  info: dict | None = None,
  on_row=None,
  budget: float = 1.0,
  cache_dir: str | None = None,
) -> list[dict]:
  """Runs each claim with a progress bar; returns one row per claim.

  Each row carries ``info`` (default ``run_info(full, seed, budget)``: date, commit, dirty,
  scale, seed, budget) and the claim's ``seed_values`` (None when it gives none); ``budget`` is
  the multiple of each claim's budget (``check_budget`` first: a claim without a knob raises);
  ``cache_dir`` is passed to each claim as ``ClaimContext.cache_dir`` (a budget curve's shared
  inputs).
  ``on_row(rows so far)`` is called after every claim (``main`` rewrites the report there)."""
  from tqdm.auto import tqdm

  from experiments.claims import ClaimContext

  from iclr26_jax.core import preemption

  check_budget(claims, budget)
  info = run_info(full, seed, budget) if info is None else info
  rows = []
  bar = tqdm(claims, desc="claims", unit="claim", file=sys.stderr)
  for claim in bar:
    if _RECEIVED:  # a signal swallowed between claims: stop before the next one starts
      bar.close()
      raise ClaimInterrupted(claim.name, _RECEIVED[0])
    bar.set_postfix_str(claim.name)
    cdir = os.path.join(out, claim.name.replace("/", "__"))
    # The measurement runs in cdir.partial, kept across an interruption so that a rerun resumes its
    # trainings from their checkpoints; cdir (the previous row's plots) is replaced only when the
    # claim has a value.
    partial = cdir + ".partial"
    _open_partial(partial, info)
    t0 = time.time()
    error = None
    seed_values = None
    stops = preemption.stop_requests()
    try:
      ctx = ClaimContext(outdir=partial, full=full, seed=seed, budget=budget, cache_dir=cache_dir)
      res = claim.run(ctx)
      value, details, plots = float(res.value), res.details, list(res.plots)
      if res.seed_values is not None:
        seed_values = {str(k): float(v) for k, v in res.seed_values.items()}
    except Exception:  # noqa: BLE001 — report the failure, keep running the others.
      value, details, plots = float("nan"), "The claim raised an error.", []
      error = traceback.format_exc()
      if _RECEIVED:  # the error may be the interrupt's doing (a library re-raised it as its own)
        bar.close()
        raise ClaimInterrupted(claim.name, _RECEIVED[0]) from None
    except BaseException as e:  # KeyboardInterrupt, a signal turned into an exception
      bar.close()
      raise ClaimInterrupted(claim.name, _signal_name(e)) from e
    if _RECEIVED:  # a signal whose exception a callback swallowed: the claim ran on regardless
      bar.close()
      raise ClaimInterrupted(claim.name, _RECEIVED[0])
    if preemption.stop_requests() != stops:
      # A training inside the claim took a SIGINT / SIGTERM, saved and returned early: whatever the
      # claim computed from it is not its measurement.
      bar.close()
      raise ClaimInterrupted(claim.name, "SIGINT or SIGTERM")
    shutil.rmtree(cdir, ignore_errors=True)
    os.replace(partial, cdir)
    plots = [cdir + p[len(partial) :] if p.startswith(partial) else p for p in plots]
    secs = time.time() - t0
    row = dict(
      name=claim.name,
      method=claim.method,
      config=claim.config,
      measure=claim.measure,
      reference=claim.reference,
      reference_source=claim.reference_source,
      direction=claim.direction,
      threshold=claim.threshold,
      value=value,
      passed=claim.passed(value),
      seconds=secs,
      details=details,
      plots=plots,
      error=error,
      seed_values=seed_values,
      **info,
    )
    rows.append(row)
    bar.write(
      f"{'PASS' if row['passed'] else 'FAIL'} {claim.name}: {_fmt(value)} "
      f"(reference {_fmt(claim.reference)}) in {secs:.1f} s",
      file=sys.stderr,
    )
    if on_row is not None:
      on_row(rows)
  return rows


def _open_partial(partial: str, info: dict) -> None:
  """Creates ``partial`` for a claim's measurement, or keeps the one an interrupted run left when
  it was made for the same commit, scale, seed, budget and versions (its trainings then resume
  from their checkpoints); one made for anything else is removed first."""
  marker = os.path.join(partial, "RUN.json")
  key = {k: info.get(k) for k in ("commit", "dirty", "scale", "seed", "budget", "versions")}
  try:
    with open(marker) as f:
      same = json.load(f) == key
  except (OSError, ValueError):
    same = False
  if not same:
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    _atomic_write(marker, json.dumps(key))


class ClaimInterrupted(Exception):
  """A signal stopped the job during ``claim``: nothing is recorded for it."""

  def __init__(self, claim: str, signal_name: str):
    super().__init__(f"{signal_name} during {claim}")
    self.claim = claim
    self.signal_name = signal_name


def _signal_name(e: BaseException) -> str:
  if isinstance(e, KeyboardInterrupt):
    return "SIGINT"
  return getattr(e, "signal_name", None) or type(e).__name__


_RECEIVED: list[str] = []  # signals the job's handlers saw (an exception raised from a handler
# can be swallowed by a callback that runs at that moment, e.g. JAX's garbage-collection hook)


def _on_signal(signum, frame) -> None:
  del frame
  name = signal.Signals(signum).name
  _RECEIVED.append(name)
  if signum == signal.SIGINT:
    raise KeyboardInterrupt
  raise _Terminated()


class _Terminated(BaseException):
  signal_name = "SIGTERM"


def _quiet_unraisable(previous):
  """An unraisable-exception hook that drops the job's own interrupts (recorded in ``_RECEIVED``
  and acted on at the claim boundary) and passes everything else to ``previous``."""

  def hook(unraisable):
    if isinstance(unraisable.exc_value, (KeyboardInterrupt, _Terminated)):
      return
    previous(unraisable)

  return hook


def same_measurement(row: dict, info: dict) -> bool:
  """True when ``row`` (a results.json row) was measured at ``info``'s commit on a clean tree, with
  the same scale, seed, budget and package versions, and without an error: a rerun keeps it."""
  return (
    row.get("commit") not in (None, "unknown")
    and row.get("commit") == info.get("commit")
    and row.get("dirty") is False
    and info.get("dirty") is False
    and all(row.get(k) == info.get(k) for k in ("scale", "seed", "budget", "versions"))
    and not row.get("error")
  )


def check_budget(claims, budget: float) -> None:
  """Raises ValueError when ``budget`` is not a positive finite number, or is not 1 and one of
  ``claims`` has no budget knob (``Claim.budget`` empty): it names those claims."""
  if not (budget > 0 and budget < float("inf")):
    raise ValueError(f"--budget must be a positive finite number; got {budget!r}")
  if budget != 1:
    knobless = [c.name for c in claims if not c.budget]
    if knobless:
      raise ValueError(
        f"--budget={budget:g}: claim(s) {knobless} have no budget knob (Claim.budget empty); "
        "claims with one: "
        + (",".join(c.name for c in claims if c.budget) or "none of those selected")
      )


# -- budget curves ---------------------------------------------------------------------------------

DEFAULT_CURVES = os.path.join(_REPO, "results", "budget_curves.json")


def parse_budgets(values) -> list[float]:
  """``--budget_curve``'s entries as sorted distinct floats; ValueError naming a bad entry."""
  out = []
  for v in values:
    try:
      k = float(v)
    except (TypeError, ValueError):
      raise ValueError(f"--budget_curve entry {v!r} is not a number") from None
    if not (k > 0 and k < float("inf")):
      raise ValueError(f"--budget_curve entry {v!r} must be a positive finite number")
    out.append(k)
  if not out:
    raise ValueError("--budget_curve needs at least one budget")
  return sorted(set(out))


def read_curves(path: str) -> dict:
  """The curves JSON at ``path`` ({} when there is none)."""
  if not os.path.exists(path):
    return {}
  with open(path) as f:
    curves = json.load(f)
  if not isinstance(curves, dict):
    raise ValueError(f"{path}: expected {{claim: curve}}, got {type(curves).__name__}")
  return curves


def curve_point(row: dict) -> dict:
  """A budget-curve point from a claim row: budget, value, the value per seed, seconds, commit,
  dirty flag, date, and the error's last line when the claim raised."""
  point = dict(
    budget=row["budget"],
    value=row["value"],
    seeds=row.get("seed_values"),
    seconds=round(row["seconds"], 1),
    commit=row["commit"],
    dirty=row["dirty"],
    date=row["date"],
    seed_arg=row["seed"],
  )
  if row.get("error"):
    point["error"] = row["error"].strip().splitlines()[-1]
  return point


def record_point(curves: dict, claim, point: dict, note: str | None = None) -> dict:
  """Adds ``point`` to ``claim``'s curve in ``curves`` (replacing a point at the same budget),
  points sorted by budget; ``note`` (when given) is stored as the curve's ``"note"``."""
  curve = curves.setdefault(
    claim.name, {"direction": claim.direction, "threshold": claim.threshold, "points": []}
  )
  curve["direction"], curve["threshold"] = claim.direction, claim.threshold
  curve["points"] = sorted(
    [p for p in curve["points"] if p["budget"] != point["budget"]] + [point],
    key=lambda p: p["budget"],
  )
  if note:
    curve["note"] = note
  return curves


def plot_curve(name: str, curve: dict, path: str) -> str:
  """A small PNG of ``curve``: value per budget (log-2 axis), each seed's value as dots, the
  pass threshold dashed. Returns ``path``."""
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  pts = curve["points"]
  fig, ax = plt.subplots(figsize=(4.2, 2.8))
  ax.plot(
    [p["budget"] for p in pts],
    [p["value"] for p in pts],
    marker="o",
    c="tab:blue",
    label="claim value",
  )
  for p in pts:
    seeds = p.get("seeds") or {}
    ax.scatter([p["budget"]] * len(seeds), list(seeds.values()), s=12, c="gray", zorder=3)
  ax.axhline(
    curve["threshold"],
    ls="--",
    c="tab:red",
    lw=1,
    label=f"pass: {curve['direction']} than {curve['threshold']:g}",
  )
  ax.set_xscale("log", base=2)
  ax.set_xlabel("budget (× laptop)")
  ax.set_ylabel("value")
  ax.set_title(name, fontsize=9)
  ax.legend(fontsize=7)
  fig.tight_layout()
  os.makedirs(os.path.dirname(path), exist_ok=True)
  fig.savefig(path, dpi=80)
  plt.close(fig)
  return path


def curve_plot_path(plot_dir: str, name: str) -> str:
  return os.path.join(plot_dir, name.replace("/", "__") + ".png")


def curve_section(name: str, curve: dict, plot_dir: str, out: str) -> list[str]:
  """The report lines for ``name``'s budget curve: what ``reasons.curve_trend`` reads, a table
  of the points (value, each seed's, seconds, run) and the plot when it exists."""
  from experiments.claims import reasons

  trend, why = reasons.curve_trend(curve)
  lines = [f"**Budget curve** ({trend}): {why}"]
  if curve.get("note"):
    lines[0] += f" Note: {curve['note']}"
  lines += [
    "",
    "| budget | value | per seed | seconds | run |",
    "| --- | --- | --- | --- | --- |",
  ]
  for p in curve["points"]:
    seeds = p.get("seeds")
    per = " / ".join(f"{k}: {_fmt(v)}" for k, v in seeds.items()) if seeds else "–"
    run = f"{p['date'][:16]} {p['commit'][:10]}" + (" dirty" if p.get("dirty") else "")
    lines.append(f"| ×{p['budget']:g} | {_fmt(p['value'])} | {per} | {p['seconds']:.0f} | {run} |")
  plot = curve_plot_path(plot_dir, name)
  if os.path.exists(plot):
    lines += ["", f"![budget curve]({os.path.relpath(plot, out)})"]
  return lines + [""]


def select_claims(claims: list, only: list[str]) -> list:
  """The claims named by ``only``: each entry a method (``qam``: all of its claims) or one claim
  (``qam/ogbench_puzzle3x3``), in registry order. Raises ValueError naming the unknown entries
  and listing the known methods and claim names."""
  methods = {c.method for c in claims}
  names = {c.name for c in claims}
  unknown = [m for m in only if m not in methods and m not in names]
  if unknown:
    raise ValueError(
      f"--only names unknown method(s) or claim(s) {unknown}; methods with claims: "
      f"{','.join(sorted(methods))}; claims: {','.join(c.name for c in claims)}"
    )
  return [c for c in claims if c.method in only or c.name in only]


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)
  from experiments.claims import all_claims

  claims = all_claims()
  order = [c.name for c in claims]
  out = os.path.abspath(_OUT.value)
  if _REPORT_ONLY.value:
    if not os.path.exists(os.path.join(out, "results.json")):
      print(
        f"error: {out}/results.json not found: nothing to rebuild the report from", file=sys.stderr
      )
      sys.exit(2)
    rows = merge_rows(read_results(out), [], order)
    path = write_report(out, rows, False, 0.0, ran=0)
    print(f"rebuilt {path} from {len(rows)} row(s)", file=sys.stderr)
    return
  try:
    if _ONLY.value:
      claims = select_claims(claims, _ONLY.value)
    budgets = parse_budgets(_BUDGET_CURVE.value) if _BUDGET_CURVE.value else None
    if budgets and _BUDGET.value != 1:
      raise ValueError("--budget and --budget_curve exclude each other")
    for k in budgets or [_BUDGET.value]:
      check_budget(claims, k)
  except ValueError as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(2)
  curves_file = _CURVES_FILE.value or DEFAULT_CURVES
  os.makedirs(out, exist_ok=True)
  from iclr26_jax.core import workdir as workdir_lib

  lock = workdir_lib.WorkdirLock(out)  # the trainer's workdir lock: owner record, stale takeover
  try:
    lock.acquire()
  except (workdir_lib.WorkdirBusyError, workdir_lib.WorkdirWriteError) as e:
    print(f"error: {str(e).replace('--workdir', '--out')}", file=sys.stderr)
    sys.exit(2)
  if threading.current_thread() is threading.main_thread():
    _RECEIVED.clear()
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    sys.unraisablehook = _quiet_unraisable(sys.unraisablehook)
  try:
    _main_locked(claims, order, out, budgets, curves_file)
  except ClaimInterrupted as e:
    print(
      f"{e.signal_name} received during {e.claim}: stopped; nothing was recorded for it (its "
      f"previous row and plots are kept) and the rows already written stay in {out}/results.json; "
      "run the same command to resume",
      file=sys.stderr,
    )
    sys.exit(143 if e.signal_name == "SIGTERM" else 130)
  except (KeyboardInterrupt, _Terminated) as e:  # between claims or while writing the report
    name = _signal_name(e)
    print(
      f"{name} received: stopped; the rows already written stay in {out}/results.json; run the "
      "same command to resume",
      file=sys.stderr,
    )
    sys.exit(143 if name == "SIGTERM" else 130)
  finally:
    lock.release()


def _main_locked(claims, order, out, budgets, curves_file) -> None:
  cache = os.path.join(out, ".jax_cache") if _CACHE.value is None else _CACHE.value
  if cache:
    import jax

    jax.config.update("jax_compilation_cache_dir", cache)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
  if not claims:
    print("no claims registered" + (f" for {_ONLY.value}" if _ONLY.value else ""), file=sys.stderr)
  if _FRESH.value and os.path.exists(os.path.join(out, "results.json")):
    _atomic_write(os.path.join(out, "results.json"), "[]")
  previous = read_results(out)
  t0 = time.time()
  info = run_info(_FULL.value, _SEED.value, _BUDGET.value)
  if not budgets and not _REDO.value:
    done = {r["name"] for r in previous if same_measurement(r, info)} & {c.name for c in claims}
    if done:
      print(
        f"kept {len(done)} claim(s) already measured at this commit, scale, seed and versions "
        "(--redo runs them again)",
        file=sys.stderr,
      )
      claims = [c for c in claims if c.name not in done]

  def report(rows_so_far):
    # Merged with what is on disk now (this job holds the folder's lock), never a stale copy.
    merged = merge_rows(read_results(out), rows_so_far, order)
    path = write_report(
      out, merged, _FULL.value, time.time() - t0, ran=len(rows_so_far), curves_file=curves_file
    )
    return path, merged

  if budgets:
    run_curves(claims, out, budgets, curves_file, report, previous)
    return
  rows = run_claims(
    claims, out, _FULL.value, _SEED.value, info=info, on_row=report, budget=_BUDGET.value
  )
  path, merged = report(rows)
  n_pass = sum(r["passed"] for r in rows)
  kept = len(merged) - len(rows)
  print(
    f"wrote {path}: {n_pass}/{len(rows)} claims of this run pass"
    + (f"; {kept} row(s) of earlier runs kept" if kept else ""),
    file=sys.stderr,
  )
  if _STRICT.value and n_pass < len(rows):
    sys.exit(1)


def run_curves(claims, out: str, budgets, curves_file: str, report, previous) -> None:
  """``--budget_curve``: each claim at each budget in turn; every point is written to
  ``curves_file`` (and the claim's plot redrawn) as soon as it is measured, then REPORT.md is
  rebuilt from ``previous`` rows with the curves."""
  plot_dir = os.path.splitext(curves_file)[0]
  at_one = []  # a point at budget 1 is a laptop-scale run: its row joins results.json
  for claim in claims:
    for k in budgets:
      cache = os.path.join(out, "budget_cache", claim.name.replace("/", "__"))
      os.makedirs(cache, exist_ok=True)
      row = run_claims(
        [claim],
        os.path.join(out, f"budget_{k:g}"),
        _FULL.value,
        _SEED.value,
        budget=k,
        cache_dir=cache,
      )[0]
      # Two curve runs may record into one file: read-modify-write under an exclusive lock.
      lock_path = os.path.join(
        tempfile.gettempdir(),
        f"budget_curves-{hashlib.sha1(os.path.abspath(curves_file).encode()).hexdigest()[:12]}.lock",
      )
      with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        curves = read_curves(curves_file)
        record_point(curves, claim, curve_point(row), note=_CURVE_NOTE.value or None)
        _atomic_write(curves_file, json.dumps(curves, indent=2, ensure_ascii=False) + "\n")
      plot_curve(claim.name, curves[claim.name], curve_plot_path(plot_dir, claim.name))
      if k == 1:
        at_one.append(row)
      report(at_one)
      seeds = row.get("seed_values") or {}
      print(
        f"budget ×{k:g} {claim.name}: {_fmt(row['value'])} (seeds "
        + ", ".join(f"{s}: {_fmt(v)}" for s, v in seeds.items())
        + f") in {row['seconds']:.1f} s -> {curves_file}",
        file=sys.stderr,
      )


if __name__ == "__main__":
  _cli.app_run(main)
