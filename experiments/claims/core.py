"""The core's own claim: the trainer reaches the closed-form least-squares optimum."""

import os


from experiments.claims import Claim, ClaimContext, ClaimResult

CONFIG = "experiments/configs/toy/regression.py"


def _run(ctx: ClaimContext) -> ClaimResult:
  from experiments.configs.toy import regression
  from iclr26_jax.core import metrics as metrics_lib
  from experiments import toy
  from iclr26_jax.core import trainer

  arg = f"seed={ctx.seed},progress_bar=False" + (
    ",num_steps=8000,optim.learning_rate=0.01" if ctx.full else ""
  )
  cfg = regression.get_config(arg)
  workdir = os.path.join(ctx.outdir, "workdir")
  result = trainer.train(toy.ToyRegression(cfg), cfg, workdir)
  err = result.eval_metrics["eval/ols_param_error"]
  records = [
    r for r in metrics_lib.read_jsonl(os.path.join(workdir, "metrics.jsonl")) if "train/loss" in r
  ]
  plot = os.path.join(ctx.outdir, "loss.png")
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  fig, ax = plt.subplots(figsize=(5, 3))
  ax.semilogy([r["step"] for r in records], [r["train/loss"] for r in records], marker="o")
  ax.axhline(cfg.toy.noise**2, ls="--", c="gray", label="noise floor σ²")
  ax.set_xlabel("step")
  ax.set_ylabel("train MSE")
  ax.legend()
  fig.tight_layout()
  fig.savefig(plot, dpi=100)
  plt.close(fig)
  details = (
    f"{cfg.num_steps} Adam steps (cosine LR) on {cfg.toy.num_examples} points, "
    f"d={cfg.toy.dim}; final eval MSE {result.eval_metrics['eval/mse']:.4g} "
    f"(noise σ² = {cfg.toy.noise**2:.4g})."
  )
  return ClaimResult(value=float(err), details=details, plots=[plot])


CLAIMS = [
  Claim(
    name="core/toy_ols_recovery",
    method="core",
    config=CONFIG,
    measure="max |w − w_OLS| over weights and bias after training the linear toy model",
    reference=0.0,
    reference_source="closed-form least squares (numpy lstsq, float64)",
    direction="lower",
    threshold=1e-2,
    run=_run,
  ),
]
