"""lmKAN claims: accuracy vs inference FLOPs against same-shape baselines, and the penalty.

Every point is a full training run through the shared trainer (mean ± std over seeds). The
FLOP ratio at matched accuracy follows the paper's Fig. 1 arrows: baseline FLOPs needed to reach
an lmKAN point's error, over that point's FLOPs (``iclr26_jax.lmkan.analysis``). The paper's
numbers are quoted for reference; its methane ratio is in H100 time on the real DFT data and its
image ratio on CIFAR-10, so at laptop scale on offline stand-ins only the direction (ratio > 1:
lmKAN needs fewer FLOPs) is checked. The verdicts come from the measurements; spec §14 expects
no lmKAN advantage on the random-teacher task at this scale.
"""

from __future__ import annotations

import os

import numpy as np

from experiments.claims import Claim, ClaimContext, ClaimResult

_RUNS: dict = {}  # (config file, arg) -> eval metrics; claims of one process share runs
_ROOT: dict = {}


def _scale(ctx: ClaimContext) -> dict:
  if ctx.full:
    return dict(steps=6000, seeds=(0, 1, 2), methane_lmkan=(4, 8, 16, 32),
                methane_mlp=(8, 16, 32, 64, 128), digits_steps=3000, digits_lmkan=(4, 8, 16),
                digits_cnn=(4, 8, 16, 32), teacher_lmkan=(16, 32, 64),
                teacher_mlp=(16, 32, 64, 128, 256), teacher_seeds=(0, 1, 2))
  return dict(steps=3000, seeds=(0, 1), methane_lmkan=(4, 8, 16), methane_mlp=(8, 16, 32, 64),
              digits_steps=1000, digits_lmkan=(4, 8), digits_cnn=(4, 8, 16),
              teacher_lmkan=(8, 16), teacher_mlp=(16, 32, 64), teacher_seeds=(0,))


def _train(ctx: ClaimContext, config: str, arg: str) -> dict:
  """Trains ``experiments/configs/lmkan/<config>.py:<arg>`` once per process; eval metrics."""
  import importlib

  from iclr26_jax.core import trainer
  from iclr26_jax.lmkan.method import LMKANMethod
  key = (config, arg, ctx.full)
  if key not in _RUNS:
    root = _ROOT.setdefault(ctx.full, os.path.join(ctx.outdir, "runs"))
    workdir = os.path.join(root, config, arg.replace(",", "__").replace("=", "-")
                           .replace("(", "").replace(")", ""))
    module = importlib.import_module(f"experiments.configs.lmkan.{config}")
    cfg = module.get_config(arg + ",progress_bar=False")
    _RUNS[key] = trainer.train(LMKANMethod(cfg), cfg, workdir).eval_metrics
  return _RUNS[key]


def _sweep(ctx, config, variant, widths, seeds, steps, widths_arg, metric):
  """{width: (flops, [errors over seeds])} for one model family."""
  out = {}
  for w in widths:
    errs, flops = [], None
    for s in seeds:
      arg = ",".join(x for x in (variant, f"seed={s}", f"num_steps={steps}",
                                 f"checkpoint_every={steps}", f"log_every={max(steps // 5, 1)}",
                                 widths_arg(w)) if x)
      m = _train(ctx, config, arg)
      flops = m["model/flops_per_sample"]
      errs.append(1.0 - m["eval/accuracy"] if metric == "error" else m["eval/mse_over_var"])
    out[w] = (flops, errs)
  return out


def _compare(ctx, title, ylabel, model_name, base_name, model, base, fname):
  """Table + plot + the best matched-FLOP ratio over the model's points."""
  from iclr26_jax.lmkan.analysis import flop_ratio_at_matched_error
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  bf = [v[0] for v in base.values()]
  be = [float(np.mean(v[1])) for v in base.values()]
  lines = [f"| model | width | FLOPs/sample | {ylabel} (mean ± std) | FLOP ratio at matched "
           f"{ylabel} |", "| --- | --- | --- | --- | --- |"]
  for w, (f, e) in base.items():
    lines.append(f"| {base_name} | {w} | {f:,.0f} | {np.mean(e):.4f} ± {np.std(e):.4f} | |")
  best = None
  for w, (f, e) in model.items():
    r = flop_ratio_at_matched_error(bf, be, f, float(np.mean(e)))
    tag = {"exact": "", "lower_bound": " (lower bound: beats every baseline)",
           "upper_bound": " (upper bound: worse than the smallest baseline)"}[r.kind]
    lines.append(f"| {model_name} | {w} | {f:,.0f} | {np.mean(e):.4f} ± {np.std(e):.4f} | "
                 f"{r.ratio:.2f}{tag} |")
    if r.kind != "upper_bound" and (best is None or r.ratio > best[0]):
      best = (r.ratio, w, r.kind)
  if best is None:
    # Worse than the smallest baseline at every width: no ratio is established (each is only
    # bounded above), so the claim's value is NaN, which never passes.
    bound = max(flop_ratio_at_matched_error(bf, be, f, float(np.mean(e))).ratio
                for f, e in model.values())
    best = (float("nan"), None, "upper_bound")
  fig, ax = plt.subplots(figsize=(5.5, 3.6))
  for name, fam, c in ((base_name, base, "tab:red"), (model_name, model, "tab:blue")):
    xs = [v[0] for v in fam.values()]
    ax.errorbar(xs, [np.mean(v[1]) for v in fam.values()], [np.std(v[1]) for v in fam.values()],
                marker="o", c=c, capsize=3, label=name)
    for w, (f, e) in fam.items():
      ax.annotate(str(w), (f, np.mean(e)), textcoords="offset points", xytext=(3, 3), fontsize=7)
  ax.set_xscale("log")
  ax.set_xlabel("inference FLOPs per sample")
  ax.set_ylabel(ylabel)
  ax.set_title(title)
  ax.legend()
  fig.tight_layout()
  path = os.path.join(ctx.outdir, fname)
  fig.savefig(path, dpi=110)
  plt.close(fig)
  if best[1] is None:
    summary = (f"{model_name} is worse than the smallest {base_name} at every width: no FLOP "
               f"advantage is established (the ratio is at most {bound:.2f} at any point).")
  else:
    summary = (f"Best ratio {best[0]:.2f} at {model_name} width {best[1]}"
               f"{'' if best[2] == 'exact' else ' (' + best[2].replace('_', ' ') + ')'}.")
  return best[0], "\n".join(lines) + "\n\n" + summary, [path]


def _methane_sweeps(ctx):
  sc = _scale(ctx)
  hid = lambda w: f"lmkan.hidden=({w},{w})"
  lm = _sweep(ctx, "methane", "", sc["methane_lmkan"], sc["seeds"], sc["steps"], hid, "mse")
  mlp = _sweep(ctx, "methane", "mlp", sc["methane_mlp"], sc["seeds"], sc["steps"], hid, "mse")
  return lm, mlp


def _methane(ctx: ClaimContext) -> ClaimResult:
  lm, mlp = _methane_sweeps(ctx)
  ratio, table, plots = _compare(ctx, "methane-like surrogate (12→h→h→1)", "test MSE/Var",
                                 "lmKAN G=8", "ReLU MLP", lm, mlp, "methane_flops.png")
  sc = _scale(ctx)
  return ClaimResult(ratio, f"{sc['steps']} steps, batch 512, seeds {sc['seeds']}.\n\n" + table,
                     plots)


def _penalty(ctx: ClaimContext) -> ClaimResult:
  sc = _scale(ctx)
  lm, _ = _methane_sweeps(ctx)
  hid = lambda w: f"lmkan.hidden=({w},{w})"
  off = _sweep(ctx, "methane", "nopenalty", (8,), sc["seeds"], sc["steps"], hid, "mse")
  on_e, off_e = lm[8][1], off[8][1]
  details = (f"lmKAN 12→8→8→1, G = 8, {sc['steps']} steps, seeds {sc['seeds']}: test MSE/Var "
             f"with the two-phase Hessian schedule {np.mean(on_e):.4f} ± {np.std(on_e):.4f}, "
             f"with λ = 0 throughout {np.mean(off_e):.4f} ± {np.std(off_e):.4f}. Value = "
             "without / with.")
  return ClaimResult(float(np.mean(off_e) / np.mean(on_e)), details)


def _digits(ctx: ClaimContext) -> ClaimResult:
  sc = _scale(ctx)
  ch = lambda w: f"lmkan.channels=({w},)"
  lm = _sweep(ctx, "digits", "", sc["digits_lmkan"], sc["seeds"], sc["digits_steps"], ch, "error")
  cnn = _sweep(ctx, "digits", "cnn", sc["digits_cnn"], sc["seeds"], sc["digits_steps"], ch,
               "error")
  ratio, table, plots = _compare(ctx, "sklearn digits (conv3×3(c) → pool → dense 10)",
                                 "test error", "lmKAN CNN", "ReLU CNN", lm, cnn,
                                 "digits_flops.png")
  return ClaimResult(ratio, f"{sc['digits_steps']} steps, batch 128, seeds {sc['seeds']}.\n\n"
                     + table, plots)


def _teacher(ctx: ClaimContext) -> ClaimResult:
  sc = _scale(ctx)
  hid = lambda w: f"lmkan.hidden=({w},{w},{w})"
  lm = _sweep(ctx, "teacher", "", sc["teacher_lmkan"], sc["teacher_seeds"], sc["steps"], hid,
              "mse")
  mlp = _sweep(ctx, "teacher", "mlp", sc["teacher_mlp"], sc["teacher_seeds"], sc["steps"], hid,
               "mse")
  ratio, table, plots = _compare(ctx, "32-D random teacher (32→h→h→h→1)", "test MSE/Var",
                                 "lmKAN G=8", "ReLU MLP", lm, mlp, "teacher_flops.png")
  return ClaimResult(ratio, f"{sc['steps']} steps, batch 512, seeds {sc['teacher_seeds']}. "
                     "Spec §14: no lmKAN advantage is expected here at laptop scale.\n\n" + table,
                     plots)


CLAIMS = [
    Claim(name="lmkan/methane_flop_ratio", method="lmkan",
          config="experiments/configs/lmkan/methane.py (lmkan and :mlp, several widths)",
          measure="MLP FLOPs needed to reach an lmKAN point's test MSE/Var, over the lmKAN "
                  "FLOPs (best lmKAN point); > 1 means lmKAN is cheaper at equal accuracy",
          reference=12.9, reference_source="paper Fig. 1 (H100 time on DFT methane; direction "
          "checked here)", direction="higher", threshold=1.0, run=_methane),
    Claim(name="lmkan/hessian_penalty_helps", method="lmkan",
          config="experiments/configs/lmkan/methane.py vs :nopenalty",
          measure="test MSE/Var without the penalty over with it (lmKAN h = 8)",
          reference=1.1, reference_source="spec R2: training without the penalty is clearly "
          "worse (> 10% here)", direction="higher", run=_penalty),
    Claim(name="lmkan/digits_flop_ratio", method="lmkan",
          config="experiments/configs/lmkan/digits.py (lmkan_cnn and :cnn)",
          measure="CNN FLOPs needed to reach an lmKAN CNN point's test error, over its FLOPs",
          reference=2.1, reference_source="paper Fig. 1 (CIFAR-10; direction checked here)",
          direction="higher", threshold=1.0, run=_digits),
    Claim(name="lmkan/teacher_flop_ratio", method="lmkan",
          config="experiments/configs/lmkan/teacher.py (lmkan and :mlp)",
          measure="MLP FLOPs needed to reach an lmKAN point's test MSE/Var, over its FLOPs",
          reference=6.0, reference_source="paper Fig. 1 (general function approximation)",
          direction="higher", threshold=1.0, run=_teacher),
]
