"""Why a claim fails, when it does, and what the authors' own code gave at the same budget.

The reproduce report (``experiments/reproduce.py``) reads this module by claim name; the claims
modules do not import it. A reason never changes a verdict: the verdict is the measurement, and a
reason is shown only beside a FAIL.

* ``REASONS``: claim name -> ``Reason``, read from ``reasons.json`` beside this file. The class
  is ``"budget"`` only with evidence that the claim's budget, not this project's code, decides
  it: the authors' code run at the same budget (``authors_code``, measured outside this project
  and cited with repository, commit and the changes it needed), or a measurement showing the
  training unfinished (a convergence column of the claim that still moves when the budget grows;
  a critic whose values are still at their floor). Without such evidence the class is
  ``"open"``. A FAIL with no entry reads "open (no reason recorded)"; a claim that raised, or
  measured nothing (NaN), says so instead.
* ``FULL_RUN_ESTIMATES``: claim name -> ``{"h200": "...", "v5e-16": "..."}``, the estimated wall
  time of the claim's ``--full`` run on one H200 and on a TPU v5e-16 slice, filled from the
  accelerator plan (``results/accelerator_plan.md``) where a claim's ``--full`` config
  is one the plan compiled; it may also be given by defining the same dict in a module
  ``experiments/accelerator_plan.py``, which ``full_run_estimates`` merges when it exists. Until
  then the report prints "–"; claims without a ``--full`` setting (``NO_FULL_SETTING``) print
  "n/a".

The numbers in ``authors_code`` paragraphs come from the authors' code run outside this project,
one thread, side by side with this project's runs at the same budget.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import os

CLASSES = ("budget", "open")
ESTIMATE_TARGETS = (("h200", "one H200"), ("v5e-16", "TPU v5e-16"))


@dataclasses.dataclass(frozen=True)
class Reason:
  """Why a claim fails.

  Attributes:
    cls: ``"budget"`` (evidence below) or ``"open"`` (no evidence yet).
    summary: a few words for the report table's "why (if FAIL)" cell.
    evidence: one line with the numbers (the report's detail section).
    authors_code: the "Authors' code at this budget" paragraph (Markdown), or "".
  """

  cls: str
  summary: str
  evidence: str
  authors_code: str = ""

  def __post_init__(self):
    if self.cls not in CLASSES:
      raise ValueError(f"reason class must be one of {CLASSES}; got {self.cls!r}")
    if not self.summary or not self.evidence:
      raise ValueError("a reason needs a summary and its evidence (for 'open': what is missing)")

  def cell(self) -> str:
    """The table cell: ``budget: <summary>`` / ``open: <summary>``."""
    return f"{self.cls}: {self.summary}"


# The table itself is data: experiments/claims/reasons.json, {"reasons": {claim: {"class",
# "summary", "evidence", "authors_code", optional "note"}}, "full_run_estimates": {claim: {target:
# text}}, "no_full_setting": [claim, ...]}. The estimates come from results/accelerator_plan.md
# (python -m benchmarks.accelerator_plan): runs x steps x the estimated step time of the method's
# accelerator-scale config compiled for one H200 and a v5e-16 slice (roofline + launches, never
# measured). "≤": the plan's config is the claim's largest run; "≈": the claim's own config. Data
# generation and evaluation are not included; claims whose --full config is not a compiled one
# stay "–".
TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reasons.json")


def _load(path: str = TABLE):
  with open(path, encoding="utf-8") as f:
    raw = json.load(f)
  reasons = {
    name: Reason(r["class"], r["summary"], r["evidence"], r.get("authors_code", ""))
    for name, r in raw["reasons"].items()
  }
  return reasons, dict(raw["full_run_estimates"]), frozenset(raw["no_full_setting"])


REASONS, FULL_RUN_ESTIMATES, NO_FULL_SETTING = _load()
"""``REASONS``: claim -> ``Reason``; ``FULL_RUN_ESTIMATES``: claim -> {"h200" | "v5e-16": text};
``NO_FULL_SETTING``: the claims that do not read ``ctx.full``."""


# -- budget curves ---------------------------------------------------------------------------------
# ``results/budget_curves.json`` (written by ``python -m experiments.reproduce
# --budget_curve=...``) holds a measured curve per claim. ``curve_trend`` reads one; a claim may be
# classed ``budget`` only when its curve, where it has one, reads "toward passing".

CURVE_MIN_POINTS = 3
CURVE_MIN_SPAN = 4.0


def _spread(point: dict) -> float:
  seeds = [v for v in (point.get("seeds") or {}).values() if v == v]
  return float(max(seeds) - min(seeds)) if len(seeds) >= 2 else float("nan")


def curve_trend(curve: dict) -> tuple[str, str]:
  """What a budget curve shows: ``(trend, sentence)``.

  The trend compares the points at the smallest and the largest budget: the change of the claim's
  value, signed so that positive is toward passing, against the seed spread (max - min of the
  per-seed values) of those two points, the larger of the two:

  * ``"toward passing"``: the change exceeds the spread;
  * ``"away from passing"``: the change is below minus the spread;
  * ``"flat"``: within the spread either way;
  * ``"too short"``: fewer than ``CURVE_MIN_POINTS`` measured points, a span under
    ``CURVE_MIN_SPAN``x, or a NaN value / no per-seed values at an end point (no spread to judge
    a change against).

  Args:
    curve: ``{"direction": "higher" | "lower", "threshold": float, "points": [{"budget",
      "value", "seeds": {seed: value} | None, ...}]}``.

  Returns:
    (trend, one sentence with the numbers).
  """
  if curve.get("direction") not in ("higher", "lower"):
    raise ValueError(f"curve direction must be 'higher' or 'lower'; got {curve.get('direction')!r}")
  pts = sorted((p for p in curve.get("points", []) if "error" not in p), key=lambda p: p["budget"])
  if len(pts) < CURVE_MIN_POINTS:
    return "too short", f"{len(pts)} measured point(s); a curve needs {CURVE_MIN_POINTS}."
  lo, hi = pts[0], pts[-1]
  span = hi["budget"] / lo["budget"]
  if span < CURVE_MIN_SPAN:
    return "too short", f"budgets span {span:g}x; a curve needs {CURVE_MIN_SPAN:g}x."
  sign = 1.0 if curve["direction"] == "higher" else -1.0
  spread = max(_spread(lo), _spread(hi))
  values = ", ".join(f"×{p['budget']:g}: {p['value']:.4g}" for p in pts)
  if not (lo["value"] == lo["value"] and hi["value"] == hi["value"] and spread == spread):
    return "too short", f"values {values}: a NaN value or no per-seed values at an end point."
  change = sign * (hi["value"] - lo["value"])
  passes = sign * (hi["value"] - curve["threshold"]) >= 0
  trend = (
    "toward passing" if change > spread else "away from passing" if change < -spread else "flat"
  )
  return trend, (
    f"values {values}; from ×{lo['budget']:g} to ×{hi['budget']:g} the value moves "
    f"{change:+.3g} toward passing against a seed spread of {spread:.3g} (threshold "
    f"{curve['threshold']:g}, {'passed' if passes else 'not passed'} at ×{hi['budget']:g})."
  )


def class_conflicts(curves: dict, reasons: dict | None = None) -> list[str]:
  """Claims classed ``budget`` in ``reasons`` (default ``REASONS``) whose curve in ``curves``
  does not read "toward passing"; one line each (empty: consistent)."""
  reasons = REASONS if reasons is None else reasons
  out = []
  for name, reason in reasons.items():
    if reason.cls == "budget" and name in curves:
      trend, why = curve_trend(curves[name])
      if trend != "toward passing":
        out.append(f"{name}: classed budget but its curve reads {trend}: {why}")
  return out


def full_run_estimates() -> dict[str, dict[str, str]]:
  """``FULL_RUN_ESTIMATES`` merged with ``experiments.accelerator_plan.FULL_RUN_ESTIMATES`` (the
  plan wins) when that module exists."""
  out = {k: dict(v) for k, v in FULL_RUN_ESTIMATES.items()}
  if importlib.util.find_spec("experiments.accelerator_plan") is not None:
    plan = importlib.import_module("experiments.accelerator_plan")
    for name, est in getattr(plan, "FULL_RUN_ESTIMATES", {}).items():
      out.setdefault(name, {}).update(est)
  return out


def full_estimate(name: str, target: str, estimates: dict[str, dict[str, str]]) -> str:
  """The table cell for ``name``'s ``--full`` run on ``target`` (a key of ``ESTIMATE_TARGETS``)."""
  if name in NO_FULL_SETTING:
    return "n/a"
  return estimates.get(name, {}).get(target) or "–"


def why(row: dict) -> str:
  """The "why (if FAIL)" cell of a report row ("" for a PASS)."""
  if row.get("passed"):
    return ""
  if row.get("error"):
    return "error (traceback in its section)"
  value = row.get("value")
  if value is None or value != value:
    return "not measured (NaN; see its section)"
  reason = REASONS.get(row["name"])
  return reason.cell() if reason else "open: no reason recorded"
