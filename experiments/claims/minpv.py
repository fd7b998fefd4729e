"""MinPV claims: MI accuracy on the Gaussian MI task, and the learned path against the geodesic.

Chen et al., "Don't Forget Its Variance! The Minimum Path Variance Principle for Accurate and
Stable Score-Based Models" (ICLR 2026), reference code github.com/Hoemr/OpenDRE. Every point is
a full training run of ``experiments/configs/minpv/gaussian_mi.py`` through the shared trainer
(``iclr26_jax.core.trainer.train`` with ``MinPVMethod``), mean ± std over seeds.

Methods (all on the block-diagonal Gaussian MI task, MI = 2 nats at d = 10 and d/4 above):
fixed trig and VP paths with conditional time-score matching; DRE-∞ (implicit time-score
matching, Choi et al. 2022) on the trig path; the dequantified diffusion bridge of D3RE on the
linear schedule (conditional objective); KMM-MinPV (Kumaraswamy-mixture path trained jointly with
the network under the MinPV penalty). All conditional runs use the spec §10 ``fixed`` preset
(time-only weights, exact variance in the weights, floored penalty, exact bridge cross term) and
the conditional objective (no data head), so the conditional rows differ only in the path (and
the interpolant for the bridge).

Claim ``minpv/mi_error_d10``: MinPV's mean relative |MI error| at d = 10, against the analytic
mean log-ratio over the same evaluation samples (spec §14 T2: the fair truth). Threshold 0.10:
at d = 10 the MI is 2 nats, and 10 % (0.2 nats) is well above the Monte Carlo error of the
evaluation mean (the truth is computed on the same samples, so only the estimator's error
counts) but tight enough that an untrained score (estimate ≈ 0, 100 % error) or the
sign-flipped target of spec T2.3 (estimate ≈ −1 nat, 150 %) fails by a wide margin. Spec §14
warns that at laptop budgets the runs are short, so this claim may well fail here; the verdict
"MinPV beats fixed paths" is reported in the details from the same measurements, whichever way
it goes.

Claim ``minpv/path_variance_ratio``: J[α] = ∫ Var(c_t) dt (floored, δ = 1e-5, d = m = 10) of the
learned KMM path over the Cauchy–Schwarz minimum L² attained by the geodesic (spec §8); 1 is the
minimum possible. Threshold 2.0: the reference KMM initialisation sits at ≈ 5 L² and trig at
≈ 10 L² (spec §8), so a ratio below 2 means joint training removed at least three quarters of
the initial excess variance.

Laptop scale (``_scale``): d ∈ {10, 40}, seeds (0, 1), 1000 steps, batch 256, 2 × 64 residual
MLP, AdamW 3e-3 (cosine), EMA 0.99 instead of the config's 0.999 (see ``_scale``), 1024
evaluation samples, quad gap at 200 nodes: 20 training runs. First measurement (2026-11-30, two
shared cores): MinPV relative error 0.37 at d = 10 (trig 0.13, VP 0.24, DRE-∞ 0.99, bridge
0.95; every method misses by > 90 % at d = 40, where 1000 steps are far too few), J / L² = 1.71.
``--full``: d ∈ {10, 40, 80}, three seeds, 6000 steps, 3 × 128, EMA 0.999 (accelerator scale).
"""

from __future__ import annotations

import os

import numpy as np

from experiments.claims import Claim, ClaimContext, ClaimResult

_RUNS: dict = {}  # (arg, full) -> (eval metrics, learned path params); claims share runs
_ROOT: dict = {}

# label -> config variant/overrides (without the sizes, which come from _scale).
METHODS = {
    "trig (fixed)": "trig,fixed",
    "VP (fixed)": "trig,fixed,path.name=vp",
    "DRE-∞ (implicit, trig)": "trig,loss.objective=implicit",
    "bridge (D3RE, linear)": "trig,fixed,interpolant=bridge,path.name=linear",
    "KMM-MinPV": "fixed,loss.objective=conditional",
}
MINPV = "KMM-MinPV"
FIXED = ("trig (fixed)", "VP (fixed)")


def _scale(ctx: ClaimContext) -> dict:
  if ctx.full:
    return dict(dims=(10, 40, 80), seeds=(0, 1, 2), steps=6000, batch=512, width=128, depth=3,
                time_features=64, eval_size=4096, lr=1e-3, gap_factor=4, ema=0.999)
  # Sized for the < 4 min budget on two shared cores: 20 runs, each dominated by per-step
  # dispatch and compilation (batch 1024 × 800 steps was less accurate than 256 × 1200). EMA
  # 0.99: with the config's 0.999 a 1000-step run still weighs the initial network by
  # 0.999^1000 ≈ 0.37, which pulled every estimate towards 0 (trig, d = 10: 1.06 → 1.66).
  return dict(dims=(10, 40), seeds=(0, 1), steps=1000, batch=256, width=64, depth=2,
              time_features=32, eval_size=1024, lr=3e-3, gap_factor=2, ema=0.99)


def _sizes(sc: dict) -> str:
  return (f"num_steps={sc['steps']},batch_size={sc['batch']},model.width={sc['width']},"
          f"model.depth={sc['depth']},model.time_features={sc['time_features']},"
          f"data.eval_size={sc['eval_size']},optim.learning_rate={sc['lr']},"
          f"ema_decay={sc['ema']},estimate.gap_factor={sc['gap_factor']},"
          f"checkpoint_every={sc['steps']},log_every={sc['steps']},progress_bar=False")


def _train(ctx: ClaimContext, arg: str):
  """Trains ``gaussian_mi.py:<arg>`` once per process; (eval metrics, evaluated path φ)."""
  import jax

  from experiments.configs.minpv import gaussian_mi
  from iclr26_jax.core import trainer
  from iclr26_jax.minpv.method import MinPVMethod
  key = (arg, ctx.full)
  if key not in _RUNS:
    root = _ROOT.setdefault(ctx.full, os.path.join(ctx.outdir, "runs"))
    name = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in arg.split(",num_steps")[0])
    cfg = gaussian_mi.get_config(arg)
    res = trainer.train(MinPVMethod(cfg), cfg, os.path.join(root, name))
    params = res.state.extras["ema"] if cfg.ema_decay > 0 else res.state.params
    _RUNS[key] = (res.eval_metrics, jax.tree.map(np.asarray, params["path"]))
  return _RUNS[key]


def _arg(sc, method, dim, seed):
  return f"{METHODS[method]},data.dim={dim},seed={seed},{_sizes(sc)}"


def _sweep(ctx):
  """{method: {dim: [eval metrics per seed]}}."""
  sc = _scale(ctx)
  return {m: {d: [_train(ctx, _arg(sc, m, d, s))[0] for s in sc["seeds"]] for d in sc["dims"]}
          for m in METHODS}


def _rel_err(m):
  return abs(m["eval/mi_estimate"] - m["eval/mi_sample_truth"]) / m["eval/mi_sample_truth"]


def _mi(ctx: ClaimContext) -> ClaimResult:
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  sc = _scale(ctx)
  res = _sweep(ctx)
  ms = lambda xs: f"{np.mean(xs):.3f} ± {np.std(xs):.3f}"
  lines = ["| method | d | MI estimate | truth (sample / analytic) | abs. MI error | rel. error | "
           "log-ratio RMSE | quad gap |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
  for meth, by_dim in res.items():
    for d, runs in by_dim.items():
      lines.append(
          f"| {meth} | {d} | {ms([r['eval/mi_estimate'] for r in runs])} | "
          f"{np.mean([r['eval/mi_sample_truth'] for r in runs]):.3f} / "
          f"{runs[0]['eval/mi_true']:.3f} | {ms([r['eval/mae'] for r in runs])} | "
          f"{ms([_rel_err(r) for r in runs])} | {ms([r['eval/log_ratio_rmse'] for r in runs])} | "
          f"{np.mean([r['eval/quad_gap'] for r in runs]):+.4f} |")

  fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
  for meth, by_dim in res.items():
    dims = list(by_dim)
    for ax, fn in ((axes[0], lambda r: r["eval/mae"]), (axes[1], _rel_err)):
      vals = [[fn(r) for r in by_dim[d]] for d in dims]
      ax.errorbar(dims, [np.mean(v) for v in vals], [np.std(v) for v in vals], marker="o",
                  capsize=3, label=meth, ls="--" if meth != MINPV else "-")
  axes[0].set_ylabel("|MI estimate − truth| (nats)")
  axes[1].set_ylabel("relative |MI error|")
  for ax in axes:
    ax.set_xlabel("dimension d")
    ax.set_xticks(sc["dims"])
    ax.set_yscale("log")
  axes[0].legend(fontsize=8)
  fig.suptitle(f"Gaussian MI: error vs d ({len(sc['seeds'])} seeds, {sc['steps']} steps)")
  fig.tight_layout()
  plot = os.path.join(ctx.outdir, "mi_error_vs_d.png")
  fig.savefig(plot, dpi=110)
  plt.close(fig)

  d0 = sc["dims"][0]
  err = {m: float(np.mean([_rel_err(r) for r in res[m][d0]])) for m in METHODS}
  verdicts = []
  for d in sc["dims"]:
    mae = {m: float(np.mean([r["eval/mae"] for r in res[m][d]])) for m in METHODS}
    best_fixed = min(FIXED, key=mae.get)
    won = mae[MINPV] < mae[best_fixed]
    verdicts.append(f"d = {d}: MinPV |MI error| {mae[MINPV]:.3f} vs best fixed path "
                    f"({best_fixed}) {mae[best_fixed]:.3f} → MinPV "
                    f"{'beats' if won else 'does not beat'} the fixed paths; most accurate "
                    f"overall: {min(mae, key=mae.get)}.")
  details = (
      f"Laptop protocol: {sc['steps']} steps, batch {sc['batch']}, residual MLP "
      f"{sc['depth']} × {sc['width']} ({sc['time_features']} time features), AdamW "
      f"{sc['lr']:g} with cosine decay, EMA {sc['ema']}, seeds {sc['seeds']}, {sc['eval_size']} "
      "held-out p1 samples, trapezoid on 100 uniform nodes (quad gap = estimate at "
      f"{100 * sc['gap_factor']} nodes − estimate). Configs: `gaussian_mi.py:<variant>` with "
      + ", ".join(f"{m}: `{a}`" for m, a in METHODS.items())
      + ". Truth = mean analytic log r over the same evaluation samples (the analytic MI is "
      "shown next to it). Mean ± std over seeds.\n\n" + "\n".join(lines)
      + "\n\nVerdict (\"MinPV beats fixed paths\", from these runs): " + " ".join(verdicts)
      + f"\n\nValue = MinPV's relative |MI error| at d = {d0} ({err[MINPV]:.3f}); other "
      "methods at that d: " + ", ".join(f"{m} {v:.3f}" for m, v in err.items() if m != MINPV)
      + ". Spec §14: at these budgets a learned path need not beat a good fixed schedule.")
  return ClaimResult(err[MINPV], details, [plot])


def _path(ctx: ClaimContext) -> ClaimResult:
  import jax.numpy as jnp

  from iclr26_jax.minpv import analysis, paths

  sc = _scale(ctx)
  d = sc["dims"][0]
  m = float(d)     # E‖x1‖² = tr Σ = d for the Gaussian MI task
  learned = [_train(ctx, _arg(sc, MINPV, d, s))[1] for s in sc["seeds"]]
  geo = analysis.geodesic(dim=d, m=m)
  j = lambda name, phi: float(analysis.path_variance_integral(paths.get_path(name), phi, dim=d,
                                                              m=m))
  j_learned = [j("kmm", phi) for phi in learned]
  fixed = {"KMM init": ("kmm", paths.kmm_init(5)), "trig": ("trig", {}), "VP": ("vp", {}),
           "linear (affine β)": ("linear", {})}
  j_fixed = {k: j(n, p) for k, (n, p) in fixed.items()}
  own = {}   # L² over each path's own endpoints and constraint (spec T1.2)
  for k, (n, p) in fixed.items():
    ends = paths.get_path(n)(p, jnp.asarray([paths.EPS, 1.0 - paths.EPS]))
    own[k] = analysis.length_squared(float(ends.alpha[0]), float(ends.alpha[1]), dim=d, m=m,
                                     constraint="affine" if n == "linear" else "spherical")
  ratio = float(np.mean(j_learned) / geo.length_sq)

  schedules = {"KMM-MinPV (learned, seed 0)": (paths.get_path("kmm"), learned[0])}
  schedules.update({k: (paths.get_path(n), p) for k, (n, p) in fixed.items()})
  plot = os.path.join(ctx.outdir, "schedules.png")
  analysis.plot_schedules(schedules, dim=d, m=m, geo=geo, path=plot,
                          title=f"learned vs geodesic vs fixed schedules (d = m = {d})")
  probes = np.array([0.1, 0.25, 0.5, 0.75, 0.9])
  alpha_l = np.mean([np.asarray(paths.kmm(p, jnp.asarray(probes)).alpha) for p in learned], 0)
  alpha_0 = np.asarray(paths.kmm(paths.kmm_init(5), jnp.asarray(probes)).alpha)
  fmt = lambda a: "/".join(f"{x:.3f}" for x in a)
  rows = ["| path | J[α] | J / L² | bound over its own endpoints and constraint |",
          "| --- | --- | --- | --- |",
          f"| geodesic (Cauchy–Schwarz minimum L², α: 1 → 0) | {geo.length_sq:.4g} | 1 | |",
          f"| KMM-MinPV learned (mean ± std over seeds) | {np.mean(j_learned):.4g} ± "
          f"{np.std(j_learned):.3g} | {ratio:.3f} | |"]
  rows += [f"| {k} | {v:.4g} | {v / geo.length_sq:.3f} | {own[k]:.4g} |"
           for k, v in j_fixed.items()]
  details = (
      f"J[α] = ∫ Var(c_t | ‖x1‖² = m) dt with the floored variance (δ = 1e-5) of the penalty, "
      f"d = m = {d}, trapezoid on a dense geometric grid over [1e-5, 1 − 1e-5]; learned paths "
      f"are the evaluated (EMA) φ of the `{METHODS[MINPV]}` runs of the MI claim at d = {d} "
      f"({sc['steps']} joint steps, seeds {sc['seeds']}). A path that stops short of α = 0 "
      "has a smaller bound: VP ends at α(1) = exp(−5.05) ≈ 0.006, so its J can sit below the L² of "
      "the full geodesic; linear uses its own affine β (affine metric).\n\n" + "\n".join(rows)
      + f"\n\nα at t = {fmt(probes)}: learned {fmt(alpha_l)}, geodesic "
      f"{fmt(geo.alpha_at(probes))}, KMM init {fmt(alpha_0)}. Value = J_learned / L² "
      f"= {ratio:.3f} (1 is the minimum).")
  return ClaimResult(ratio, details, [plot])


CLAIMS = [
    Claim(name="minpv/mi_error_d10", method="minpv",
          config="experiments/configs/minpv/gaussian_mi.py (KMM-MinPV: fixed,"
                 "loss.objective=conditional; baselines trig, VP, DRE-∞, bridge)",
          measure="KMM-MinPV's relative |MI estimate − truth| at d = 10 (mean over seeds); the "
                  "table compares all methods at d = 10 and 40",
          reference=0.0, reference_source="analytic MI (mean analytic log r on the evaluation "
          "samples); pass within 10 %", direction="lower", threshold=0.10, run=_mi),
    Claim(name="minpv/path_variance_ratio", method="minpv",
          config="experiments/configs/minpv/gaussian_mi.py:fixed,loss.objective=conditional "
                 "(learned φ) vs analysis.geodesic",
          measure="integrated path variance J of the learned KMM path over the geodesic's L² "
                  "(d = m = 10)",
          reference=1.0, reference_source="closed form: Cauchy–Schwarz minimum (spec §8)",
          direction="lower", threshold=2.0, run=_path),
]
