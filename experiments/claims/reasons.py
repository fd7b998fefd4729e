"""Why a claim fails, when it does, and what the authors' own code gave at the same budget.

The reproduce report (``experiments/reproduce.py``) reads this module by claim name; the claims
modules do not import it. A reason never changes a verdict: the verdict is the measurement, and a
reason is shown only beside a FAIL.

* ``REASONS``: claim name -> ``Reason``. The class is ``"budget"`` only with evidence that the
  claim's budget, not this project's code, decides it: the authors' code run at the same budget
  (``authors_code``, measured outside this project and cited with repository, commit and the
  changes it needed), or a measurement showing the training unfinished (a convergence column of
  the claim that still moves when the budget grows; a critic whose values are still at their
  floor).
  Without such evidence the class is ``"open"``. A FAIL with no entry reads "open (no reason
  recorded)"; a claim that raised, or measured nothing (NaN), says so instead.
* ``FULL_RUN_ESTIMATES``: claim name -> ``{"h200": "...", "v5e-16": "..."}``, the estimated wall
  time of the claim's ``--full`` run on one H200 and on a TPU v5e-16 slice, filled from the
  accelerator plan (``experiments/bench/ACCELERATOR_PLAN.md``) where a claim's ``--full`` config
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


_OPENDRE = (
  "`Hoemr/OpenDRE` at fa20299, run outside this project on one thread. It needed four fixes to "
  "run: its config silently forces d = 2 for the Gaussian MI task (`--d` is ignored), an undefined "
  "`auxiliary_loss`, a missing `embed_dim` on its time-aware block, and a forced 4 × 256 network "
  "for d < 100."
)
_LMKAN = (
  "`schwallergroup/lmkan` at 826d28c publishes the layer and kernels but no training scripts, so "
  "its README recipe was run (outside this project, one thread) in a pure-PyTorch port of its "
  "forward, which equals this project's layer to 9e-7: BatchNorm without affine before every "
  "lmKAN layer, G 8–10, two-phase Hessian schedule, lr 1e-3, U(±0.1/√N_in) table init."
)
_NOT_RUN = "Not run: the authors' code has no runnable setting at this budget."

REASONS: dict[str, Reason] = {
  "minpv/objectives_mi_d10": Reason(
    "budget",
    "budget curve under the threshold at 2×, at it at 4× (0.46 / 0.30 / 0.17 / 0.094 / 0.104 at ¼ … 4×)",
    "Budget curve (D3RE at the reference's lr 1e-3): worst mean relative error "
    "0.457 / 0.298 / 0.166 / 0.094 / 0.104 at 375 / 750 / 1500 / 3000 / 6000 steps (seeds 0, 1; "
    "change 0.35 against a seed spread of 0.06): under 0.1 at 2×, at the threshold at 4×. At 1× "
    "conditional 0.041, DRE-∞ 0.020 and D3RE 0.166: D3RE alone holds the claim, biased low with a "
    "small spread (1.686 ± 0.025 against 2.021), and more steps close it. Found on the way (the "
    "curve first measured with D3RE at lr 3e-3 read 0.319 / 0.298 / 0.157 / 0.273 / 0.157, "
    "stalling past 1×): at 3e-3 D3RE's implicit objective ended 1.10 nats apart over seeds 0-3 at "
    "3000 steps (MI 1.19 / 2.29 / 1.40 / 2.10) and 1.13 apart with a 4× batch, so the spread was "
    "the step size, not gradient noise; at 1e-3 0.26 apart. The claim's D3RE row now uses the "
    "reference's 1e-3 (`experiments/claims/minpv.py`). The authors' code at 1000 steps misses by "
    "0.344 / 0.781 / 0.924 against this project's 0.034 / 0.111 / 0.119 at the same 1000 steps.",
    _OPENDRE
    + " Objectives at 1000 steps (d = 10, MI = 2, batch 256, 2 × 64), worst relative error "
    "of the MI estimate: conditional trig 0.344, DRE-∞ 0.781, D3RE 0.924; this project's at the "
    "same budget 0.034 / 0.111 / 0.119.",
  ),
  "minpv/minpv_vs_fixed_d10": Reason(
    "budget",
    "budget curve moves toward passing (+0.50 / +0.42 / +0.29 / +0.15 / +0.07 at ¼ … 4×)",
    "Budget curve: MinPV − trig |MI error| +0.498 / +0.420 / +0.290 at 750 / 1500 / 3000 "
    "steps (a3a5594 / a10940a) and +0.153 / +0.074 at 6000 / 12,000 steps "
    "(seeds 0, 1: +0.126 / +0.022 at 4×): every doubling moves it toward passing by "
    "more than the seed spread (0.07-0.10), still > 0 at 4×. "
    "Learned path spends 27 % of its training times in the band where the MI accrues (trig 65 %); "
    "the authors' code learns the same path (band fraction 0.26) and gives claim value +0.65 "
    "(lr 3e-3) / +1.29 (lr 1e-3) against this project's +0.31. The reference trains with ~110× "
    "the samples (`gaussian_mi.py:paper`, `--full`).",
    _OPENDRE + " d = 10, MI = 2, 3000 steps, batch 256, 2 × 64: trig (lr 3e-3) 1.705 / 1.594 / "
    "1.673 / 2.079; MinPV (`--mvp`, lr 3e-3) 0.343 / 1.624 / 1.047 / 1.326, band fraction 0.26 "
    "(trig 0.654) — the same learned path as ours. Claim value (MinPV |err| − trig |err|): +0.65 at "
    "lr 3e-3, +1.29 at lr 1e-3; ours +0.31.",
  ),
  "lmkan/teacher_flop_ratio": Reason(
    "open",
    "budget curve flat (0.436 at ¼ … 4×: lmKAN stays worse than the smallest MLP)",
    "Budget curve: 0.4363 at 250 / 500 / 1000 steps (a0e616a) and at 2000 / "
    "4000, both seeds, i.e. the upper-bound reading (smallest MLP's 2,129 FLOPs "
    "over lmKAN h = 16's 4,880): "
    "the most accurate lmKAN point stays less accurate than the smallest MLP (at 1×: 0.841 vs "
    "0.731; at 4×: 0.793 vs 0.650 / 0.657), so the ratio cannot move until it overtakes it; "
    "flat, so the class is open. "
    "lmKAN h = 16 reaches 0.841 (below least squares 0.891) but not the smallest MLP (0.731); "
    "no advantage is expected on the random teacher at this scale (in short runs the FLOP "
    "advantage shows on smooth, low-dimensional targets). The authors' recipe at "
    "the same 1000 steps: eval-mode 22.1 / 18.4 (train-mode 1.015 / 1.000, the mean), this "
    "project's recipe 0.856 / 0.838 in the same PyTorch harness, matched-FLOPs MLP 0.659 / 0.665.",
    _LMKAN + " On this project's teacher (32→16→16→16→1, batch 512) its recipe gives eval-mode "
    "test MSE/Var 22.1 / 18.4 at 1000 steps (train-mode BatchNorm 1.015 / 1.000: it predicts the "
    "mean), 5.5e6 / 2.12 at 3000, 916 at 10,000; this project's recipe in the same PyTorch harness "
    "0.856 / 0.838 (here 0.854). Matched-FLOPs MLP (H = 25): 0.659 / 0.665.",
  ),
  "lmkan/hessian_penalty_helps": Reason(
    "open",
    "ratio rises to parity, not past it (0.92 / 0.90 / 0.95 / 1.00 / 0.98 at ¼ … 4×)",
    "Budget curve: without / with the penalty 0.917 / 0.904 / 0.947 at 125 / 250 / 500 "
    "steps (0b2b850 / ebaf387) and 0.995 / 0.985 at 1000 / 2000 (seeds "
    "0-2: 0.979 / 0.975 / 1.001 at 4×). The end points read toward passing (+0.07 against a "
    "spread of 0.05), but what the curve approaches is 1, the two runs equal, not the 1.1 the "
    "claim asks: from 1× to 4× the change (+0.04) is inside the 1× seed spread (0.13), and no "
    "point exceeds 1.001. The penalty stops hurting as training lengthens and never helps, so "
    "the class stays open. Ratio 0.947 (3 seeds, tanh teacher, 500 steps): no effect of the penalty with the affine "
    "start. The authors' recipe on the same ablation learns nothing with or without the penalty "
    "(0.993–1.006); this project's recipe gives 0.998 in PyTorch (0.947 here).",
    _LMKAN
    + " Hessian-penalty ablation (tanh teacher, 3 seeds): the authors' recipe learns nothing "
    "either way (0.993–1.006); ours 0.998 in PyTorch (0.947 here).",
  ),
  "lmkan/digits_flop_ratio": Reason(
    "open",
    "budget curve flat past 1× (0.97 / 0.62 / 0.45 / 0.39 / 0.47 at ¼ … 4×), seed spread ~1.3",
    "Budget curve: 0.969 / 0.622 / 0.450 at 125 / 250 / 500 steps (a0e616a / "
    "4e9f139 / 0b2b850) and 0.392 / 0.474 at 1000 / 2000: flat within the seed "
    "spread (per-seed ratios 0.20-1.57 at 2× and 0.34-1.57 at 4×), so the class is open. "
    "Found: the per-seed values sit on a grid, 0.196 × 2^k (0.196 / 0.392 / 0.784 / 1.568 at "
    "2×; six of the ten per-seed values at 2× and 4× are on it): each seed's lmKAN CNN is read off at "
    "one of the four comparison CNNs (c = 4, 8, 16, 32, each twice the FLOPs of the last), "
    "because a single seed's CNN test errors are not monotone in width. On 450 test images one "
    "image is 0.22 pp, and the lmKAN-to-CNN gap the claim turns on is 2-3 images (at 1×: lmKAN "
    "CNN c = 8 2.54 % vs 1.97 % for a CNN of equal FLOPs, 5 seeds; seeds 0-4 of c = 8 range "
    "1.8-4.0 %). So the claim's value moves by factors of 2 with a few test images, and more "
    "steps do not sharpen it: at this data size the measurement, not the budget, decides the "
    "reading. What would: the paper's CIFAR-10 (10,000 test images; the method package loads a "
    "local copy, none ships and nothing is downloaded here) or a denser comparison grid; `--full` "
    "keeps the same 450 digits test images. No authors' number at this budget (their "
    "repository has no training scripts).",
  ),
  "qam/ogbench_puzzle3x3": Reason(
    "open",
    "budget curve flat (QAM − BC 0 at 625 / 1250 / 2500 updates); no evidence more updates close it",
    "Budget curve (experiments/claims/budget_curves.json): QAM − BC = 0 "
    "at every seed at 1/16, 1/8 and 1/4 of the laptop budget (625 / 1250 / 2500 updates, seeds "
    "0-2, 20 episodes each; FQL 0.017 at 100 updates, 0 from 625 on): flat, so the class is open. "
    "The points sit below 1x (a 1x point is ~25 min on 2 unshared cores; the CPU was shared by 8 "
    "sessions); whether 1x-4x moves it is unmeasured. At the laptop budget: "
    "10,000 updates (1 % of the paper's 1M) on 100 episodes (10 % of its data) with 2 × 256 "
    "networks: QAM 0.017, FQL 0.000, BC 0.000 success; the critics' data Q means (−88 to −93) sit "
    "near −1/(1 − γ) = −100, i.e. the rare goal transitions' value has not reached the start "
    "states. No doubling column yet; `--full` (paper sizes, 1M updates) is an accelerator job.",
    _NOT_RUN,
  ),
  "dsb/equal_steps_d2": Reason(
    "budget",
    "budget curve crosses the threshold at 2× (−0.24 / −0.21 / −0.08 / +0.17 / +0.29 at ¼ … 4×)",
    "Budget curve: min margin over the independent baseline −0.236 / −0.209 / −0.081 at "
    "B = 125 / 250 / 500 (a3a5594 / a10940a) and +0.165 / +0.294 at B = 1000 / 2000 "
    "(seeds 0, 1: 0.162 / 0.169 and 0.290 / 0.297): every solver beats the "
    "independent baseline from 2× on, with a seed spread of 0.01; the laptop budget (B = 500) is "
    "the one point short of it. "
    "No solver converged at B = 500 on the D = 2 gaussian preset (stable = ±0.02), measured "
    "with the reference's estimators (per-sample t, KL mean over D, forward first): "
    "cond shape at 500 → 1000 steps DLightSB 0.484 → 0.786, DLightSB-M (kl) 0.280 → 0.526, "
    "CSBM 0.496 → 0.595, α-CSBM 0.560 → 0.667 (independent baseline 0.361); `--full` runs the "
    "paper step counts.",
    _NOT_RUN,
  ),
  # Passes at laptop scale (4 × 4, β = 1.0: advantage 0.240 at the first measurement); the entry is
  # for the --full 8 × 8 run, which fails.
  "pdns/prox_vs_eta_inf": Reason(
    "budget",
    "8 × 8 (--full): 4 → 16 epochs per stage still moves it",
    "At 8 × 8, β = 0.6: 4 → 16 epochs per stage moved the advantage 0.027 → 0.097 and PDNS's "
    "median TV of the law of M 0.99 → 0.505 (the baseline's 0.51 → 0.513); PDNS stays balanced "
    "until stage 12-20 and then orders onto one sign in 4 of 5 seeds. The earlier 3-of-3 research "
    "result is not reproduced by either budget.",
    _NOT_RUN,
  ),
}

# Every claim reads ``ctx.full`` except these.
NO_FULL_SETTING = frozenset({"qam/analytic_tilt"})

# From experiments/bench/ACCELERATOR_PLAN.md: runs x steps x the estimated step time of the
# method's accelerator-scale config compiled for one H200 and a v5e-16 slice (roofline + launches,
# never measured). "≤": the plan's config is the claim's largest run (QAM: 12 seeds x QAM / FQL /
# BC at QAM's step; lmKAN: 3 seeds x 7 models at h = 128's step); "≈": the claim's own config
# (MinPV: 2 paths x 3 seeds of gaussian_mi.py:paper's step; toy: 8000 steps). Data generation
# (QAM: 1000 OGBench episodes) and evaluation are not included. Claims whose --full config is not a
# compiled one (PDNS 8 x 8, DSB D = 2, AnyBCQ's calibration) stay "–".
FULL_RUN_ESTIMATES: dict[str, dict[str, str]] = {
  "core/toy_ols_recovery": {"h200": "≈ 160 ms (est.)", "v5e-16": "≈ 448 ms (est.)"},
  "qam/ogbench_puzzle3x3": {"h200": "≤ 55.3 h (est.)", "v5e-16": "≤ 91.1 h (est.)"},
  "minpv/minpv_vs_fixed_d10": {"h200": "≈ 18.6 s (est.)", "v5e-16": "≈ 13.7 s (est.)"},
  "lmkan/teacher_flop_ratio": {"h200": "≤ 27.3 s (est.)", "v5e-16": "≤ 3.63 min (est.)"},
}


# -- budget curves ---------------------------------------------------------------------------------
# ``experiments/claims/budget_curves.json`` (written by ``python -m experiments.reproduce
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
