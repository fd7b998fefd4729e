"""MinPV claims: every estimator on the Gaussian MI task, MinPV against a fixed path at equal
budget, the parametric model at d = 40, negative controls, and the learned path's variance.

Chen et al., "Don't Forget Its Variance! The Minimum Path Variance Principle for Accurate and
Stable Score-Based Models" (ICLR 2026), reference code github.com/Hoemr/OpenDRE; baselines DRE-∞
(Choi et al., AISTATS 2022) and D3RE. Every point is a full training run of
``experiments/configs/minpv/gaussian_mi.py:<variant>`` through the shared trainer
(``trainer.train`` with ``MinPVMethod``), mean ± std over seeds, at ONE budget per claim for all
rows (steps, batch, network); the learning rate is a per-objective setting recorded in the table.
The truth is the mean analytic log r over the same evaluation samples (not the nominal MI, whose
Monte Carlo error at a few thousand samples is not negligible).

Claims (the measurements behind each choice are in the config docstrings):
- ``minpv/objectives_mi_d10``: the worst relative |MI error| at d = 10 over the three fixed-path
  estimators — conditional TSM on trig, DRE-∞ implicit on trig (``model.time_scale`` → 30), D3RE
  bridge + implicit on linear with γ = 1. Threshold 0.10 (10 %; an untrained score is
  100 % off, the sign-flipped targets > 40 %).
- ``minpv/negative_controls_d10``: the same three objectives with the flipped term
  (``loss.flip_cross_sign``): the smallest relative error must exceed 0.4, so a wrong target
  cannot pass the claim above.
- ``minpv/minpv_vs_fixed_d10``: KMM-MinPV (learned path, penalty) minus trig (fixed path), both
  conditional with the ``fixed`` preset at the same, larger budget: value = MinPV's |MI error| −
  trig's. The paper's claim is that MinPV is at least as accurate (value <= 0). The learned
  path moves training times away from the α-band that carries 90 % of the MI
  (``eval/band_fraction``, shown per row), so at laptop budgets this is expected to fail; the
  ``--full`` run uses the reference's scale (``gaussian_mi.py:paper`` sizes).
- ``minpv/quadratic_mi_d40``: the parametric Gaussian time score (``model.kind=quadratic``, the
  model class of the published DRE-∞ / D3RE MI numbers) at d = 40 (MI = 10): worst relative error
  over the three fixed-path estimators, threshold 0.10.
- ``minpv/path_variance_ratio``: J[α] of the learned KMM path over the geodesic's L², the
  Cauchy–Schwarz lower bound on J.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np

from experiments.claims import Claim, ClaimContext, ClaimResult

_RUNS: dict = {}  # (arg, full) -> (eval metrics, learned path params); claims share runs
_ROOT: dict = {}

# label -> (config variants/overrides without the sizes, learning rate). D3RE runs at the
# reference's lr 1e-3 (OpenDRE's AdamW default): at 3e-3 its implicit objective ended 1.10 nats
# apart over seeds 0-3 at 3000 steps (MI 1.19 / 2.29 / 1.40 / 2.10 against 2.02), and 1.13 apart
# with a 4x batch, so the spread is the step size, not gradient noise; at 1e-3 0.26 apart (1.73 /
# 1.93 / 1.99 / 1.76), measured with the claim's budget curve.
OBJECTIVES = {
  "conditional (trig)": ("trig,fixed", 3e-3),
  "DRE-∞ (implicit, trig)": ("implicit", 1e-3),
  "D3RE (bridge + implicit, linear, γ = 1)": ("bridge", 1e-3),
}
COMPARE = {
  "trig (fixed path)": ("trig,fixed", 3e-3),
  "KMM-MinPV (learned path)": ("fixed,loss.objective=conditional", 3e-3),
}
MINPV, FIXED = "KMM-MinPV (learned path)", "trig (fixed path)"


# --budget=K scales every run's step count (batch, network, seeds unchanged).
_BUDGET_KEYS = ("steps", "compare_steps", "quad_steps")


def _scale(ctx: ClaimContext) -> dict:
  """``_scale_1x`` with its step counts times ``ctx.budget``."""
  return ctx.scale_steps(_scale_1x(ctx), _BUDGET_KEYS)


def _scale_1x(ctx: ClaimContext) -> dict:
  """Budgets. Laptop: every row of a claim at the same steps / batch / 2 × 64 network."""
  if ctx.full:
    return dict(
      d10=10,
      d40=40,
      seeds=(0, 1, 2),
      steps=6000,
      compare_steps=3000,
      batch=512,
      quad_steps=20000,
      compare_batch=9600,
      width=128,
      depth=3,
      compare_width=256,
      compare_depth=4,
      time_features=64,
      eval_size=4096,
      gap_factor=4,
      ema=0.999,
    )
  # EMA 0.99: with 0.999 a 1500-step run still weighs the initial network by 0.999^1500 ≈ 0.22.
  return dict(
    d10=10,
    d40=40,
    seeds=(0, 1),
    steps=1500,
    compare_steps=3000,
    batch=256,
    quad_steps=4000,
    compare_batch=256,
    width=64,
    depth=2,
    compare_width=64,
    compare_depth=2,
    time_features=32,
    eval_size=1024,
    gap_factor=2,
    ema=0.99,
  )


def _sizes(sc: dict, steps: int, batch: int, width: int, depth: int) -> str:
  return (
    f"num_steps={steps},batch_size={batch},model.width={width},"
    f"model.depth={depth},model.time_features={sc['time_features']},"
    f"data.eval_size={sc['eval_size']},ema_decay={sc['ema']},"
    f"estimate.gap_factor={sc['gap_factor']},"
    f"checkpoint_every={steps},log_every={steps},progress_bar=False"
  )


def _train(ctx: ClaimContext, arg: str):
  """Trains ``gaussian_mi.py:<arg>`` once per process; (eval metrics, evaluated path φ)."""
  import jax

  from experiments.configs.minpv import gaussian_mi
  from iclr26_jax.core import trainer
  from iclr26_jax.minpv.method import MinPVMethod

  key = (arg, ctx.full)
  if key not in _RUNS:
    root = _ROOT.setdefault(ctx.full, os.path.join(ctx.outdir, "runs"))
    # One workdir per distinct config: the readable variant part plus a digest of the whole arg
    # (the same variant at two budgets must not resume one another's run).
    digest = hashlib.sha1(arg.encode()).hexdigest()[:8]
    name = (
      "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in arg.split(",num_steps")[0])
      + "_"
      + digest
    )
    cfg = gaussian_mi.get_config(arg)
    res = trainer.train(MinPVMethod(cfg), cfg, os.path.join(root, name))
    params = res.state.extras["ema"] if cfg.ema_decay > 0 else res.state.params
    _RUNS[key] = (res.eval_metrics, jax.tree.map(np.asarray, params["path"]))
  return _RUNS[key]


def _arg(spec, dim, seed, sizes, extra=""):
  variant, lr = spec
  return f"{variant},data.dim={dim},seed={seed},optim.learning_rate={lr}{extra},{sizes}"


def _rows(ctx, table: dict, dim: int, seeds, sizes: str, extra: str = "") -> dict:
  """{label: [eval metrics per seed]}."""
  return {
    k: [_train(ctx, _arg(spec, dim, s, sizes, extra))[0] for s in seeds]
    for k, spec in table.items()
  }


def _rel_err(m):
  return abs(m["eval/mi_estimate"] - m["eval/mi_sample_truth"]) / m["eval/mi_sample_truth"]


def _ms(xs):
  return f"{np.mean(xs):.3f} ± {np.std(xs):.3f}"


def _table(res: dict, table: dict) -> str:
  lines = [
    "| method | config | lr | MI estimate | truth (sample / analytic) | rel. error | "
    "log-ratio RMSE | band fraction | quad gap |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
  ]
  for k, runs in res.items():
    lines.append(
      f"| {k} | `{table[k][0]}` | {table[k][1]:g} | "
      f"{_ms([r['eval/mi_estimate'] for r in runs])} | "
      f"{np.mean([r['eval/mi_sample_truth'] for r in runs]):.3f} / "
      f"{runs[0]['eval/mi_true']:.3f} | {_ms([_rel_err(r) for r in runs])} | "
      f"{_ms([r['eval/log_ratio_rmse'] for r in runs])} | "
      f"{np.mean([r.get('eval/band_fraction', np.nan) for r in runs]):.3f} | "
      f"{np.mean([r['eval/quad_gap'] for r in runs]):+.4f} |"
    )
  return "\n".join(lines)


def _bar_plot(ctx, res: dict, name: str, title: str) -> str:
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  labels = list(res)
  vals = [[_rel_err(r) for r in res[k]] for k in labels]
  fig, ax = plt.subplots(figsize=(7, 3.2))
  ax.bar(
    range(len(labels)),
    [np.mean(v) for v in vals],
    yerr=[np.std(v) for v in vals],
    capsize=4,
    color="tab:blue",
  )
  ax.axhline(0.10, color="k", ls="--", lw=1, label="10 % threshold")
  ax.set_xticks(range(len(labels)))
  ax.set_xticklabels(labels, fontsize=7)
  ax.set_ylabel("relative |MI error|")
  ax.set_title(title, fontsize=9)
  ax.legend(fontsize=7)
  fig.tight_layout()
  path = os.path.join(ctx.outdir, name)
  fig.savefig(path, dpi=110)
  plt.close(fig)
  return path


def _protocol(sc, steps, batch, width, depth, extra=""):
  return (
    f"{steps} steps, batch {batch}, residual MLP {depth} × {width} "
    f"({sc['time_features']} time features){extra}, AdamW with cosine decay, EMA "
    f"{sc['ema']}, seeds {sc['seeds']}, {sc['eval_size']} held-out p1 samples, trapezoid "
    "on 100 uniform nodes. Mean ± std over seeds; truth = mean analytic log r on the same "
    "samples. Band fraction = share of training times whose α(t) lies in the α-band that "
    "carries 90 % of the MI."
  )


def _worst_row(ctx, table, dim, steps, plot_name, title, model_note=""):
  """Trains every row of ``table`` at one budget; the worst mean relative error is the value."""
  sc = _scale(ctx)
  sizes = _sizes(sc, steps, sc["batch"], sc["width"], sc["depth"])
  res = _rows(ctx, table, dim, sc["seeds"], sizes)
  err = {k: float(np.mean([_rel_err(r) for r in v])) for k, v in res.items()}
  worst = max(err, key=err.get)
  plot = _bar_plot(ctx, res, plot_name, title)
  details = (
    f"Protocol: {_protocol(sc, steps, sc['batch'], sc['width'], sc['depth'])}"
    f"{model_note}\n\n{_table(res, table)}\n\nValue = the worst mean relative error "
    f"({worst}: {err[worst]:.3f})."
  )
  per_seed = {
    s: max(_rel_err(v[i]) for v in res.values()) for i, s in enumerate(sc["seeds"])
  }  # each seed's worst row
  return ClaimResult(err[worst], details, [plot], seed_values=per_seed)


def _objectives(ctx: ClaimContext) -> ClaimResult:
  sc = _scale(ctx)
  return _worst_row(
    ctx,
    OBJECTIVES,
    sc["d10"],
    sc["steps"],
    "mi_objectives_d10.png",
    f"Gaussian MI d = {sc['d10']}: every estimator at one budget",
  )


def _controls(ctx: ClaimContext) -> ClaimResult:
  sc = _scale(ctx)
  sizes = _sizes(sc, sc["steps"], sc["batch"], sc["width"], sc["depth"])
  res = _rows(
    ctx, OBJECTIVES, sc["d10"], sc["seeds"][:1], sizes, extra=",loss.flip_cross_sign=True"
  )
  err = {k: float(np.mean([_rel_err(r) for r in v])) for k, v in res.items()}
  best = min(err, key=err.get)
  details = (
    f"Same runs as `minpv/objectives_mi_d10` (seed {sc['seeds'][0]}) with "
    "`loss.flip_cross_sign=True`: the plain target's β̇⟨x0, x1⟩, the bridge target's "
    "⟨μ̇, z⟩/√v and the implicit objective's λ ∂_t s change sign.\n\n"
    + _table(res, OBJECTIVES)
    + f"\n\nValue = the smallest relative error ({best})."
  )
  return ClaimResult(err[best], details, [])


def _compare(ctx: ClaimContext) -> ClaimResult:
  sc = _scale(ctx)
  sizes = _sizes(
    sc, sc["compare_steps"], sc["compare_batch"], sc["compare_width"], sc["compare_depth"]
  )
  res = _rows(ctx, COMPARE, sc["d10"], sc["seeds"], sizes)
  mae = {k: float(np.mean([r["eval/mae"] for r in v])) for k, v in res.items()}
  band = {k: float(np.mean([r["eval/band_fraction"] for r in v])) for k, v in res.items()}
  value = mae[MINPV] - mae[FIXED]
  plot = _bar_plot(
    ctx,
    res,
    "minpv_vs_fixed_d10.png",
    f"MinPV vs trig at equal budget (d = {sc['d10']}, {sc['compare_steps']} steps)",
  )
  details = (
    "Protocol: "
    + _protocol(
      sc, sc["compare_steps"], sc["compare_batch"], sc["compare_width"], sc["compare_depth"]
    )
    + " Both rows: conditional TSM with the `fixed` preset; MinPV trains the KMM path jointly "
    "under the penalty (deterministic grid normaliser, φ clipped apart).\n\n"
    + _table(res, COMPARE)
    + f"\n\nValue = MinPV |MI error| − trig |MI error| = {mae[MINPV]:.3f} − {mae[FIXED]:.3f} "
    f"= {value:+.3f} (≤ 0: MinPV at least as accurate, the paper's claim). The learned path "
    f"puts {band[MINPV]:.0%} of its training times in the MI-carrying α-band against trig's "
    f"{band[FIXED]:.0%}: MinPV minimises the target variance by spending time where α → 0, "
    "which at this budget starves the band where the MI accrues. "
    + (
      "At accelerator scale (`--full`, the reference's batch 9600 and 4 × 256) the same claim "
      "runs unchanged."
      if not ctx.full
      else ""
    )
  )
  per_seed = {
    s: res[MINPV][i]["eval/mae"] - res[FIXED][i]["eval/mae"] for i, s in enumerate(sc["seeds"])
  }
  return ClaimResult(value, details, [plot], seed_values=per_seed)


def _quadratic(ctx: ClaimContext) -> ClaimResult:
  sc = _scale(ctx)
  # One learning rate and the 30·t embedding for all three rows: the d × d matrix W needs more
  # steps than the d = 10 MLP rows (measured at 1500 steps: conditional 7.0, implicit 9.6,
  # bridge 9.4 for a truth of 10.0; conditional at 4000 steps 9.47).
  table = {k: (v + ",quadratic,model.time_scale=30", 3e-3) for k, (v, _) in OBJECTIVES.items()}
  return _worst_row(
    ctx,
    table,
    sc["d40"],
    sc["quad_steps"],
    "mi_quadratic_d40.png",
    f"Parametric Gaussian time score, d = {sc['d40']} (MI = {sc['d40'] / 4:g})",
    model_note=" Model: `model.kind=quadratic` (a(t) + Σ b_k(t)(Wx)_k², "
    "coefficient MLP of t of the stated width).",
  )


def _path(ctx: ClaimContext) -> ClaimResult:
  import jax.numpy as jnp

  from iclr26_jax.minpv import analysis, paths

  sc = _scale(ctx)
  d = sc["d10"]
  m = float(d)  # E‖x1‖² = tr Σ = d for the Gaussian MI task
  sizes = _sizes(
    sc, sc["compare_steps"], sc["compare_batch"], sc["compare_width"], sc["compare_depth"]
  )
  learned = [_train(ctx, _arg(COMPARE[MINPV], d, s, sizes))[1] for s in sc["seeds"]]
  geo = analysis.geodesic(dim=d, m=m)
  j = lambda name, phi: float(
    analysis.path_variance_integral(paths.get_path(name), phi, dim=d, m=m)
  )
  j_learned = [j("kmm", phi) for phi in learned]
  fixed = {
    "KMM init": ("kmm", paths.kmm_init(5)),
    "trig": ("trig", {}),
    "VP": ("vp", {}),
    "linear (affine β)": ("linear", {}),
  }
  j_fixed = {k: j(n, p) for k, (n, p) in fixed.items()}
  own = {}  # L² over each path's own endpoints and constraint: a lower bound on its own J
  for k, (n, p) in fixed.items():
    ends = paths.get_path(n)(p, jnp.asarray([paths.EPS, 1.0 - paths.EPS]))
    own[k] = analysis.length_squared(
      float(ends.alpha[0]),
      float(ends.alpha[1]),
      dim=d,
      m=m,
      constraint="affine" if n == "linear" else "spherical",
    )
  ratio = float(np.mean(j_learned) / geo.length_sq)

  schedules = {"KMM-MinPV (learned, seed 0)": (paths.get_path("kmm"), learned[0])}
  schedules.update({k: (paths.get_path(n), p) for k, (n, p) in fixed.items()})
  plot = os.path.join(ctx.outdir, "schedules.png")
  analysis.plot_schedules(
    schedules,
    dim=d,
    m=m,
    geo=geo,
    path=plot,
    title=f"learned vs geodesic vs fixed schedules (d = m = {d})",
  )
  probes = np.array([0.1, 0.25, 0.5, 0.75, 0.9])
  alpha_l = np.mean([np.asarray(paths.kmm(p, jnp.asarray(probes)).alpha) for p in learned], 0)
  alpha_0 = np.asarray(paths.kmm(paths.kmm_init(5), jnp.asarray(probes)).alpha)
  fmt = lambda a: "/".join(f"{x:.3f}" for x in a)
  rows = [
    "| path | J[α] | J / L² | bound over its own endpoints and constraint |",
    "| --- | --- | --- | --- |",
    f"| geodesic (Cauchy–Schwarz minimum L², α: 1 → 0) | {geo.length_sq:.4g} | 1 | |",
    f"| KMM-MinPV learned (mean ± std over seeds) | {np.mean(j_learned):.4g} ± "
    f"{np.std(j_learned):.3g} | {ratio:.3f} | |",
  ]
  rows += [
    f"| {k} | {v:.4g} | {v / geo.length_sq:.3f} | {own[k]:.4g} |" for k, v in j_fixed.items()
  ]
  details = (
    f"J[α] = ∫ Var(c_t | ‖x1‖² = m) dt with the floored variance (δ = 1e-5) of the penalty, "
    f"d = m = {d}, trapezoid on a dense geometric grid over [1e-5, 1 − 1e-5]; learned paths "
    f"are the evaluated (EMA) φ of the `{COMPARE[MINPV][0]}` runs of `minpv/minpv_vs_fixed_d10` "
    f"({sc['compare_steps']} joint steps, seeds {sc['seeds']}). A path that stops short of α = 0 "
    "has a smaller bound: VP ends at α(1) = exp(−5.05) ≈ 0.006, so its J can sit below the L² of "
    "the full geodesic; linear uses its own affine β (affine metric).\n\n"
    + "\n".join(rows)
    + f"\n\nα at t = {fmt(probes)}: learned {fmt(alpha_l)}, geodesic "
    f"{fmt(geo.alpha_at(probes))}, KMM init {fmt(alpha_0)}. Value = J_learned / L² "
    f"= {ratio:.3f} (1 is the minimum)."
  )
  return ClaimResult(ratio, details, [plot])


_CFG = "experiments/configs/minpv/gaussian_mi.py"

CLAIMS = [
  Claim(
    name="minpv/objectives_mi_d10",
    method="minpv",
    config=f"{_CFG}:trig,fixed | :implicit | :bridge (d = 10, one budget)",
    measure="worst mean relative |MI estimate − truth| over conditional TSM (trig), "
    "DRE-∞ (implicit, trig) and D3RE (bridge + implicit, γ = 1) at d = 10",
    reference=0.0,
    reference_source="analytic MI (mean analytic log r on the evaluation "
    "samples); pass within 10 %",
    direction="lower",
    threshold=0.10,
    run=_objectives,
    budget="training steps of every run (batch, network, seeds unchanged)",
  ),
  Claim(
    name="minpv/negative_controls_d10",
    method="minpv",
    config=f"{_CFG}:<each objective>,loss.flip_cross_sign=True",
    measure="smallest relative |MI error| of the three objectives with the flipped term",
    reference=1.0,
    reference_source="a wrong target must miss the analytic MI by > 40 %",
    direction="higher",
    threshold=0.4,
    run=_controls,
  ),
  Claim(
    name="minpv/minpv_vs_fixed_d10",
    method="minpv",
    config=f"{_CFG}:fixed,loss.objective=conditional vs :trig,fixed (equal budget)",
    measure="KMM-MinPV |MI error| − trig |MI error| at d = 10, same steps / batch / network",
    reference=0.0,
    reference_source="paper: the minimum-variance path is at least as accurate as fixed schedules",
    direction="lower",
    threshold=0.0,
    run=_compare,
    budget="training steps of every run (batch, network, seeds unchanged)",
  ),
  Claim(
    name="minpv/quadratic_mi_d40",
    method="minpv",
    config=f"{_CFG}:<objective>,quadratic,data.dim=40",
    measure="worst mean relative |MI error| of the three objectives with the parametric "
    "Gaussian time score at d = 40 (MI = 10)",
    reference=0.0,
    reference_source="analytic MI; pass within 10 %",
    direction="lower",
    threshold=0.10,
    run=_quadratic,
  ),
  Claim(
    name="minpv/path_variance_ratio",
    method="minpv",
    config=f"{_CFG}:fixed,loss.objective=conditional (learned φ) vs analysis.geodesic",
    measure="integrated path variance J of the learned KMM path over the geodesic's L² "
    "(d = m = 10)",
    reference=1.0,
    reference_source="closed form: Cauchy–Schwarz minimum, attained by the geodesic",
    direction="lower",
    threshold=2.0,
    run=_path,
  ),
]
