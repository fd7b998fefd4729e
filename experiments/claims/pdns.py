r"""PDNS claims: exact checks on an enumerable Ising lattice and a Gaussian mixture, and the paper's
central claim (the proximal schedule avoids the mode collapse of the eta = infinity baseline).

Guo, Choi, Zhu, Tao, Chen, "Proximal Diffusion Neural Sampler" (ICLR 2026, arXiv 2510.03824),
reference code github.com/AlexandreGUO2001/PDNS. Every number is a training run of a config in
``experiments/configs/pdns/`` through the shared trainer (``iclr26_jax.core.trainer.train`` with
``PDNSMethod``); runs are cached per process and shared between claims (the PDNS 4 x 4 runs of
the A/B claim are also the exact-lattice check's runs when the settings coincide).

Claim ``pdns/ising4_log_z``: 4 x 4 periodic Ising, beta = 0.6, h = 0 (exact by enumeration: log Z
= 20.056533, P(M < 0) = 0.49977), discrete masked sampler, adaptive eps = 0.3, buffer 2048,
33 stages of 32 steps. Value |log Z^ - log Z| (nats, 4096 evaluation paths). Threshold 0.1: a
sampler locked onto one magnetisation sign misses by log 2 = 0.69, a wrong RN term or
sign of r by orders of magnitude, while the IS estimator's own error at ESS >= 0.1 and 4096 paths
is a few 0.01 nats. The details also give ESS, P(M < 0), E|M|/D against the exact values and the
TV between the empirical sample law and pi over the 2^16 states next to the i.i.d.-sampling
floor (exact samples of pi at the same N).

Claim ``pdns/two_mode_10d``: the 10-D two-component mixture (weights 0.3 / 0.7, means 8 apart,
log Z = 2), continuous sampler. Value |log Z^ - log Z|; threshold 0.3 nats: the missing-mode
error is -log 0.7 = 0.36 or -log 0.3 = 1.2 nats, and at laptop scale the Euler–Maruyama bias of
100 steps plus IS error leave a few 0.1 nats; the sampled weight of the 0.3 mode is reported
against the exact one.

Claim ``pdns/prox_vs_eta_inf``: 4 x 4 Ising at beta = 1.0 (barrier 2 x 4 bonds x 2 beta: the
sign-flip region has probability ~1e-3 under pi; exact P(M < 0) = 0.5 by symmetry), PDNS
(adaptive eps = 0.3) vs the eta = infinity baseline (``baseline`` variant, c = 1 at every stage,
same number of stages, steps and energy evaluations), several seeds. Measured: sign-balance error
|P^(M < 0) - P(M < 0)| and |log Z^ - log Z| per run; value = mean baseline error - mean PDNS error
of the sign balance. Threshold 0.2: a collapsed sampler has error 0.5, a balanced one the
sampling error of P^ (sd 0.008 at 4096 samples) plus seed-to-seed spread; an advantage of 0.2
requires PDNS to keep a clearly balanced law where the baseline loses a sign in most seeds.
(4 x 4 at beta = 0.6 with this budget is passed by both, and the baseline collapses there only
with a 1024 buffer and ~500 steps, where PDNS is not converged.)

8 x 8 A/B (``--full`` only: ten runs of ~2.4 min each on two shared cores, far more than the
minute a laptop-scale claim may add): the same claim on an 8 x 8 lattice at beta = 0.6
(exact log Z - 64 log 2 = 33.780 and exact law of M from the row transfer matrix), both arms the
config's ``laptop`` variant with 16 epochs per stage (eps = 0.3, buffer 2048, batch 256, MLP
2 x 128, 40 + 3 stages of 128 steps = 5504 steps and 88,064 energy evaluations each), seeds 1-5
(seed 0 picked the budget, below), an evaluation of 4096 paths every 4 stages and at the end
(``pdns_ising8_stages.png``: log Z^ - log Z, P^(M < 0) and the TV between the sampled and the
exact law of M, mean ± std over seeds and each seed). Verdict: the same rule (advantage >= 0.2);
stated with it before the runs, the count rule in the details: PDNS keeps both signs
(0.1 < P^(M < 0) < 0.9) in >= 4 of 5 seeds, the baseline in <= 1, and PDNS's median TV of the law
of M is the lower.

Measured (this claim alone at ``--full`` scale, the runs that
``python -m experiments.reproduce --only=pdns --full`` makes for it; 1427 s wall on two loaded
cores): FAIL, advantage 0.097; count rule not met. P^(M < 0) per seed 1-5: PDNS 1.000 / 1.000 /
0.000 / 0.486 / 0.000, baseline 1.000 / 0.000 / 0.000 / 0.000 / 0.000; |log Z^ - log Z| PDNS
0.701 / 0.708 / 0.710 / 0.004 / 0.700, baseline 0.713 / 0.761 / 0.754 / 0.765 / 0.761; ESS PDNS
0.82 / 0.83 / 0.80 / 0.43 / 0.80, baseline 0.36 / 0.74 / 0.60 / 0.56 / 0.69; TV of the law of M
PDNS 0.506 / 0.507 / 0.503 / 0.028 / 0.505 (median 0.505), baseline 0.513 / 0.514 / 0.506 /
0.515 / 0.513 (median 0.513). PDNS keeps both signs in 1 of 5 seeds (seed 4: exact log Z to 0.004
and the law of M to TV 0.028), the baseline in none; it does not separate at this CPU budget. The
per-stage plot shows what the trust region does buy: the baseline loses a sign by stage 8 in
every seed, PDNS stays balanced (P^ ~ 0.47) until stage ~12-20 and then orders onto one sign in 4
of 5 seeds. How the budget was found: (1) the ``laptop`` variant as it is (4 epochs per stage,
1376 steps, same energy evaluations), seeds 0-4, evaluated after every stage: FAIL, advantage
0.027; P^(M < 0) PDNS 1.000 / 0.145 / 0.000 / 0.000 / 0.020, baseline 1.000 / 0.971 / 0.000 /
0.000 / 0.000; |log Z^ - log Z| PDNS 0.72 / 1.86 / 3.99 / 0.74 / 4.40, baseline 0.71 / 10.4 / 0.74
/ 0.73 / 0.74; ESS PDNS 0.28 / 2e-4 / 1e-3 / 0.29 / 7e-4, baseline 0.33 / 2e-3 / 0.63 / 0.63 /
0.62; TV PDNS median 0.99, baseline 0.51 (1297 s). There PDNS does not learn: prox/kl_hat sits at
eps = 0.3 but the local ESS of its stage weights falls to ~1e-3 by stage 5 and its loss stays at
log 2 (a near-uniform paramagnet, TV 1.0) until lambda reaches 0 near stage 33, after which it
orders onto one sign or is left unconverged (seed 1's P^ = 0.145 is an unconverged sampler's).
(2) One probe, PDNS seed 0 with 16 epochs per stage: balanced, P^(M < 0) = 0.478, |log Z^ - log Z|
= 0.006, ESS 0.34, TV 0.027 (2.5 min); the claim then ran that budget on fresh seeds 1-5 (above).
The earlier research result (3 of 3 balanced with eps = 0.3 and a 2048 buffer) is not reproduced
by either budget. Accelerator config (not run): the same A/B with more samples and steps per
stage and a smaller trust region, e.g. ``ising.py:laptop,prox.epochs_per_stage=16,
prox.buffer_size=8192,prox.epsilon=0.1,prox.num_stages=120,sampler.hidden=256`` vs the same with
``baseline``, seeds 1-5 (and 24 x 24, the paper's Fig. 1, with the default config).

Laptop scale: seeds 0-4 for the A/B claim, MLP 2 x 64, buffer 2048, batch 256; the mixture run
uses buffer 2048, 20 epochs per stage, 10 + 3 stages. ``--full``: seeds 1-5 and the 8 x 8
lattice at beta = 0.6 for the A/B claim (above), MLP 2 x 128 and a 4096 buffer for the 4 x 4
check and the mixture.

First measurement (cold run, 3 min 06 s wall for the three claims on two shared
cores): |log Z^ - log Z| = 0.007 on 4 x 4 at beta = 0.6 (ESS 0.33, P(M<0) 0.492, TV 0.18 vs
floor 0.044); mixture |log Z^ - log Z| = 0.055, mode-0 weight 0.24 vs 0.3; A/B P(M<0) per seed
PDNS 0.438 / 0.296 / 0.000 / 0.531 / 1.000, baseline 1 / 0 / 0 / 0 / 1 (advantage 0.240 ± about
0.09 standard error: PDNS keeps both signs in 3 of 5 seeds, the baseline in none).

Particle benchmarks (DW-4, LJ-13; not a claim here: a PDNS particle run takes far more than the
minute a claim may add at laptop scale). ``eval/energy_w2`` (the paper's table metric),
``eval/distance_w2`` / ``_w1`` / ``_tv`` are logged by every dw4 / lj13 run against the MCMC
reference of ``eval.reference`` (``pdns.mcmc.reference_samples``: parallel tempering with MALA
moves, split R-hat / bulk ESS of the energy and mean pair distance stored with the samples;
generated once, cached in ``eval.reference.cache_dir``):

  python -m experiments.main --config=experiments/configs/pdns/dw4.py --workdir=/tmp/pdns_dw4
  python -m experiments.main --config=experiments/configs/pdns/dw4.py:baseline --workdir=/tmp/pdns_dw4_b
  python -m experiments.main --workdir=/tmp/pdns_lj13 \
      --config=experiments/configs/pdns/lj13.py:sampler.network=egnn,sampler.hidden=64,sampler.depth=3

Exploration (two shared cores, seed 0 unless stated; 4096 evaluation paths):
4 x 4 at beta = 0.6 with buffer 1024 and 480 steps: baseline P(M<0) = 0.995 (collapsed), PDNS
(eps = 1, not converged) 0.925 with ESS 0.004; with buffer 2048 and 1056 steps both balanced
(0.492 / 0.492). 6 x 6 at beta = 0.6: both collapsed (P(M<0) = 0). 4 x 4 at beta = 1.0, seeds
1 and 2: eps = 0.1 with 60 stages of 16 steps leaves lambda > 0 at the stage cap (ESS 0.002);
buffer 4096 with 16-step stages gives P(M<0) = 0.481 / 0.0002 (one seed still collapses).
"""

from __future__ import annotations

import hashlib
import importlib
import math
import os

import numpy as np

from experiments.claims import Claim, ClaimContext, ClaimResult

_RUNS: dict = {}  # (config module, arg) -> (eval metrics, per-stage log, samples or None)
_ROOT: dict = {}

_QUIET = "progress_bar=False,eval_every=1000000"  # one evaluation, at the end


def _scale(ctx: ClaimContext) -> dict:
  if ctx.full:
    return dict(
      seeds=(1, 2, 3, 4, 5),
      ab_size=8,
      ab_beta=0.6,
      hidden=128,
      mix_stages=15,
      mix_epochs=20,
      mix_buffer=4096,
    )
  return dict(
    seeds=(0, 1, 2, 3, 4),
    ab_size=4,
    ab_beta=1.0,
    hidden=64,
    mix_stages=10,
    mix_epochs=20,
    mix_buffer=2048,
  )


def _ising_arg(sc, size, beta, seed, baseline=False):
  b = "baseline," if baseline else ""
  return (
    f"{b}target.size={size},target.beta={beta},sampler.hidden={sc['hidden']},"
    "prox.buffer_size=2048,prox.epsilon=0.3,prox.epochs_per_stage=4,prox.num_stages=30,"
    f"prox.refine_stages=3,eval.num_samples=4096,seed={seed},{_QUIET}"
  )


def _ab_arg(sc, size, beta, seed, baseline=False):
  """The A/B claim's config argument: the 4 x 4 settings of ``_ising_arg`` (one evaluation at the
  end), or at 8 x 8 (``--full``) the config's own ``laptop`` variant (8 x 8, beta = 0.6, eps = 0.3,
  buffer 2048, 40 + 3 stages of 32 steps, MLP 2 x 128) with an evaluation after every stage."""
  if size != 8:
    return _ising_arg(sc, size, beta, seed, baseline)
  assert beta == 0.6, beta
  b = "baseline," if baseline else ""
  return (
    f"{b}laptop,prox.epochs_per_stage=16,eval.num_samples=4096,seed={seed},"
    "progress_bar=False,eval_every=512"
  )


def _train(ctx: ClaimContext, module: str, arg: str, keep_samples: bool = False):
  """Trains ``configs/pdns/<module>.py:<arg>`` once per process.

  Returns (final eval metrics, per-stage training log rows, EMA samples (n, D) or None).
  """
  import jax

  from iclr26_jax.core import trainer
  from iclr26_jax.pdns.method import PDNSMethod

  key = (module, arg, ctx.full)
  if key not in _RUNS or (keep_samples and _RUNS[key][2] is None):
    root = _ROOT.setdefault(ctx.full, os.path.join(ctx.outdir, "runs"))
    cfg = importlib.import_module(f"experiments.configs.pdns.{module}").get_config(arg)
    name = f"{module}_{hashlib.sha1(arg.encode()).hexdigest()[:12]}"
    method = PDNSMethod(cfg)
    res = trainer.train(method, cfg, os.path.join(root, name))
    samples = None
    if keep_samples:
      samples = np.asarray(jax.device_get(method.sample(res.state)[0]))
    _RUNS[key] = (dict(res.eval_metrics), _stage_log(os.path.join(root, name)), samples)
  return _RUNS[key]


def _stage_log(workdir: str) -> list[dict]:
  """The last logged training row of each stage, in stage order, each merged with the ``eval/*``
  row of an evaluation logged at or after it and before the next training row (the stage's end:
  an eval at step k S follows the stage-k training rows)."""
  import json

  by_step: dict = {}
  with open(os.path.join(workdir, "metrics.jsonl")) as f:
    for line in f:
      r = json.loads(line)
      by_step.setdefault(r["step"], {}).update(r)
  rows, stage = {}, None
  for step in sorted(by_step):
    r = by_step[step]
    if "stage/index" in r:
      stage = int(r["stage/index"])
      rows[stage] = dict(r)
    elif stage is not None:
      rows[stage].update({k: v for k, v in r.items() if k.startswith("eval/")})
  return [rows[k] for k in sorted(rows)]


# ------------------------------------------------------------------------------ (a) 4x4 Ising


def _ising_exact(size: int, beta: float) -> np.ndarray:
  """pi over all 2^(L^2) states (row-major sites, bit d of the index = token of site d)."""
  from iclr26_jax.pdns.method import lattice_log_prob

  d = size * size
  idx = np.arange(2**d, dtype=np.int64)
  x = ((idx[:, None] >> np.arange(d)) & 1).astype(np.int32)
  lp = np.asarray(lattice_log_prob(x, size=size, beta=beta), np.float64)
  p = np.exp(lp - lp.max())
  return p / p.sum(), x, float(lp.max() + np.log(p.sum()))


def _ising4(ctx: ClaimContext) -> ClaimResult:
  sc = _scale(ctx)
  size, beta = 4, 0.6
  ev, stages, x = _train(ctx, "ising", _ising_arg(sc, size, beta, ctx.seed), keep_samples=True)
  pi, states, log_z_exact = _ising_exact(size, beta)
  d = size * size
  codes = x.astype(np.int64) @ (1 << np.arange(d, dtype=np.int64))
  emp = np.bincount(codes, minlength=2**d) / codes.shape[0]
  tv = 0.5 * np.abs(emp - pi).sum()
  rng = np.random.default_rng(ctx.seed)
  floor = [
    0.5
    * np.abs(
      np.bincount(rng.choice(2**d, codes.shape[0], p=pi), minlength=2**d) / codes.shape[0] - pi
    ).sum()
    for _ in range(3)
  ]
  mag = (2 * states - 1).sum(1)
  err = abs(ev["eval/log_z"] - ev["eval/log_z_true"])
  rows = [
    "| quantity | PDNS | exact |",
    "| --- | --- | --- |",
    f"| log Z | {ev['eval/log_z']:.4f} | {ev['eval/log_z_true']:.6f} (enumeration: "
    f"{log_z_exact:.6f}) |",
    f"| log Z − 16 log 2 | {ev['eval/log_z_rel_ref']:.4f} | "
    f"{ev['eval/log_z_true'] - d * math.log(2):.6f} |",
    f"| ESS (4096 paths) | {ev['eval/ess']:.3f} | 1 |",
    f"| P(M < 0) | {ev['eval/p_neg']:.4f} | {float(pi[mag < 0].sum()):.5f} |",
    f"| E abs(M) / D | {ev['eval/magnetization']:.4f} | {ev['eval/magnetization_true']:.4f} |",
    f"| TV(samples, π) over 2^16 states | {tv:.4f} | i.i.d. floor at N = "
    f"{codes.shape[0]}: {np.mean(floor):.4f} ± {np.std(floor):.4f} |",
  ]
  last = stages[-1] if stages else {}
  details = (
    f"Config `ising.py:{_ising_arg(sc, size, beta, ctx.seed)}` ({len(stages)} logged stages; "
    f"final stage c = {last.get('stage/c', float('nan')):.3g}, λ = "
    f"{last.get('stage/lambda', float('nan')):.3g}). Samples are the EMA model's unweighted "
    "samples; log Ẑ and ESS from the path weights W = ℓ + r.\n\n" + "\n".join(rows)
  )
  return ClaimResult(err, details)


# ------------------------------------------------------------------------- (b) 10-D mixture


def _mix_arg(sc, seed):
  return (
    f"prox.buffer_size={sc['mix_buffer']},prox.epochs_per_stage={sc['mix_epochs']},"
    f"prox.num_stages={sc['mix_stages']},prox.refine_stages=3,eval.num_samples=4096,"
    f"seed={seed},{_QUIET}"
  )


def _mixture(ctx: ClaimContext) -> ClaimResult:
  sc = _scale(ctx)
  arg = _mix_arg(sc, ctx.seed)
  ev, stages, _ = _train(ctx, "two_mode_10d", arg)
  err = abs(ev["eval/log_z"] - ev["eval/log_z_true"])
  rows = [
    "| quantity | PDNS | exact |",
    "| --- | --- | --- |",
    f"| log Z | {ev['eval/log_z']:.4f} | {ev['eval/log_z_true']:.4f} |",
    f"| ELBO | {ev['eval/elbo']:.4f} | ≤ log Z |",
    f"| ESS (4096 paths) | {ev['eval/ess']:.3f} | 1 (EM bias caps it below 1) |",
    f"| weight of mode 0 | {ev['eval/mode_weight_0']:.4f} | 0.3 |",
    f"| weight of mode 1 | {ev['eval/mode_weight_1']:.4f} | 0.7 |",
    f"| mode-weight TV | {ev['eval/mode_weight_tv']:.4f} | 0 |",
  ]
  details = (
    f"Config `two_mode_10d.py:{arg}` ({len(stages)} logged stages), 100 EM steps, "
    "OU reference σ̄ = 3. Mode weights of the EMA model's unweighted samples (nearest "
    "mean).\n\n" + "\n".join(rows)
  )
  return ClaimResult(err, details)


# ---------------------------------------------------------------------- (c) PDNS vs eta = inf


def _ab(ctx: ClaimContext) -> ClaimResult:
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  sc = _scale(ctx)
  size, beta = sc["ab_size"], sc["ab_beta"]
  res = {}
  for label, base in (("PDNS (ε = 0.3)", False), ("η = ∞ baseline", True)):
    res[label] = [_train(ctx, "ising", _ab_arg(sc, size, beta, s, base)) for s in sc["seeds"]]
  sign = {k: [abs(r[0]["eval/p_neg"] - r[0]["eval/p_neg_true"]) for r in v] for k, v in res.items()}
  lz = {k: [abs(r[0]["eval/log_z"] - r[0]["eval/log_z_true"]) for r in v] for k, v in res.items()}
  ms = lambda xs: f"{np.mean(xs):.3f} ± {np.std(xs):.3f}"
  rows = [
    "| method | P̂(M < 0) per seed | sign-balance error | log Ẑ abs. error | ESS | "
    "E abs(M) / D abs. error |",
    "| --- | --- | --- | --- | --- | --- |",
  ]
  for k, v in res.items():
    per_seed = ", ".join(f"{r[0]['eval/p_neg']:.3f}" for r in v)
    rows.append(
      f"| {k} | {per_seed} | {ms(sign[k])} | "
      f"{ms(lz[k])} | {ms([r[0]['eval/ess'] for r in v])} | "
      f"{ms([r[0]['eval/magnetization_error'] for r in v])} |"
    )
  pd_label, bl_label = list(res)
  value = float(np.mean(sign[bl_label]) - np.mean(sign[pd_label]))

  fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
  for i, (k, v) in enumerate(res.items()):
    axes[0].scatter(
      np.full(len(v), i) + np.linspace(-0.1, 0.1, len(v)), [r[0]["eval/p_neg"] for r in v], s=40
    )
    axes[1].scatter(
      np.full(len(v), i) + np.linspace(-0.1, 0.1, len(v)),
      [r[0]["eval/log_z"] - r[0]["eval/log_z_true"] for r in v],
      s=40,
    )
    for j, r in enumerate(v):
      st = r[1]
      axes[2].plot(
        [s["stage/index"] for s in st],
        [s["stage/ess"] for s in st],
        color=f"C{i}",
        alpha=0.7,
        label=k if j == 0 else None,
      )
  axes[0].axhline(res[pd_label][0][0]["eval/p_neg_true"], color="k", ls="--", lw=1)
  axes[0].set_ylabel("P̂(M < 0)  (exact: dashed)")
  axes[1].axhline(0, color="k", ls="--", lw=1)
  axes[1].axhline(-math.log(2), color="r", ls=":", lw=1)
  axes[1].set_ylabel("log Ẑ − log Z  (red: −log 2)")
  for ax in axes[:2]:
    ax.set_xticks([0, 1])
    ax.set_xticklabels(list(res), fontsize=8)
  axes[2].set_xlabel("stage")
  axes[2].set_ylabel("stage buffer ESS")
  axes[2].set_yscale("log")
  axes[2].legend(fontsize=8)
  fig.suptitle(f"{size}×{size} Ising, β = {beta}: PDNS vs η = ∞ ({len(sc['seeds'])} seeds)")
  fig.tight_layout()
  plot = os.path.join(ctx.outdir, "pdns_vs_eta_inf.png")
  fig.savefig(plot, dpi=110)
  plt.close(fig)
  plots = [plot]
  if all(sum("eval/p_neg" in st for st in r[1]) > 1 for v in res.values() for r in v):
    plots.append(_stage_plot(res, size, beta, ctx.outdir))
  extra = _per_seed(res, sc["seeds"], ctx.full) if "eval/mag_tv" in res[pd_label][0][0] else ""
  n_stages = len(res[pd_label][0][1])

  details = (
    f"{size}×{size} periodic Ising, β = {beta}, h = 0 (exact P(M < 0) = "
    f"{res[pd_label][0][0]['eval/p_neg_true']:.4f}, log Z = "
    f"{res[pd_label][0][0]['eval/log_z_true']:.4f} by row transfer matrix). Both arms: "
    f"`ising.py:{_ab_arg(sc, size, beta, 0)}` (baseline adds the `baseline` variant: c = 1 at "
    f"every one of the same {n_stages} stages; equal steps, buffers and energy evaluations), "
    "seeds "
    f"{sc['seeds']}, 4096 evaluation samples of the EMA model. Mean ± std over seeds.\n\n"
    + "\n".join(rows)
    + f"\n\nValue = mean sign-balance error of the baseline − that of PDNS = {value:.3f} "
    f"(PDNS {np.mean(sign[pd_label]):.3f}, baseline {np.mean(sign[bl_label]):.3f})." + extra
  )
  return ClaimResult(value, details, plots)


def _per_seed(res: dict, seeds, count_rule: bool) -> str:
  """Per-seed table (sign balance, log Z error, ESS, TV between the sampled and the exact law of
  the magnetisation M) with the counts of seeds keeping both signs; with ``count_rule`` (the 8 x 8
  ``--full`` run, the only one it was stated for) also whether the rule holds: PDNS keeps both
  signs (0.1 < P^(M < 0) < 0.9) in >= 4/5 of the seeds, the baseline in <= 1/5, and PDNS's median
  TV is the lower."""
  rows = [
    "| method | seed | P̂(M < 0) | abs(log Ẑ − log Z) | ESS | TV(law of M, exact law) |",
    "| --- | --- | --- | --- | --- | --- |",
  ]
  summ = {}
  for k, v in res.items():
    for sd, (ev, _, _) in zip(seeds, v):
      rows.append(
        f"| {k} | {sd} | {ev['eval/p_neg']:.4f} | "
        f"{abs(ev['eval/log_z'] - ev['eval/log_z_true']):.3f} | {ev['eval/ess']:.4f} | "
        f"{ev['eval/mag_tv']:.3f} |"
      )
    summ[k] = (
      sum(0.1 < r[0]["eval/p_neg"] < 0.9 for r in v),
      len(v),
      float(np.median([r[0]["eval/mag_tv"] for r in v])),
    )
  (pk, (pb, n, ptv)), (bk, (bb, _, btv)) = summ.items()
  ok = pb >= 0.8 * n and bb <= 0.2 * n and ptv < btv
  rule = (
    f" Count rule stated for the 8×8 (--full) run (PDNS ≥ 4/5, baseline ≤ 1/5, lower "
    f"median TV): {'met' if ok else 'not met'}."
    if count_rule
    else ""
  )
  return (
    "\n\n" + "\n".join(rows) + f"\n\nBoth signs kept (0.1 < P̂(M < 0) < 0.9): {pk} {pb}/{n} "
    f"seeds, {bk} {bb}/{n}; median TV of the law of M: {ptv:.3f} vs {btv:.3f}.{rule}"
  )


def _stage_plot(res: dict, size: int, beta: float, outdir: str) -> str:
  """log Ẑ − log Z, P̂(M < 0) and the TV of the law of M after every stage (EMA evaluation,
  4096 paths): mean ± std over seeds (band) and each seed (thin lines); returns the PNG path."""
  import matplotlib.pyplot as plt

  keys = (
    ("log Ẑ − log Z", lambda e: e["eval/log_z"] - e["eval/log_z_true"]),
    ("P̂(M < 0)", lambda e: e["eval/p_neg"]),
    ("TV(law of M, exact)", lambda e: e.get("eval/mag_tv", float("nan"))),
  )
  fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
  for i, (k, v) in enumerate(res.items()):
    logs = [[st for st in r[1] if "eval/p_neg" in st] for r in v]  # stages with an eval
    n = min(len(lg) for lg in logs)
    stage = np.array([logs[0][j]["stage/index"] for j in range(n)])
    for ax, (name, get) in zip(axes, keys):
      y = np.array([[get(lg[j]) for j in range(n)] for lg in logs])  # (seeds, stages)
      m, sd = y.mean(0), y.std(0)
      ax.plot(stage, m, color=f"C{i}", lw=2, label=f"{k} (mean ± std, {len(v)} seeds)")
      ax.fill_between(stage, m - sd, m + sd, color=f"C{i}", alpha=0.2)
      for row in y:
        ax.plot(stage, row, color=f"C{i}", lw=0.5, alpha=0.5)
      ax.set_xlabel("stage")
      ax.set_ylabel(name)
  axes[0].axhline(0, color="k", ls="--", lw=1)
  axes[0].axhline(-math.log(2), color="r", ls=":", lw=1)
  axes[0].set_ylim(bottom=max(axes[0].get_ylim()[0], -20))
  axes[1].axhline(0.5, color="k", ls="--", lw=1)
  axes[0].legend(fontsize=7)
  fig.suptitle(f"{size}×{size} Ising, β = {beta}: per-stage evaluation (red: −log 2)")
  fig.tight_layout()
  path = os.path.join(outdir, f"pdns_ising{size}_stages.png")
  fig.savefig(path, dpi=110)
  plt.close(fig)
  return path


CLAIMS = [
  Claim(
    name="pdns/ising4_log_z",
    method="pdns",
    config="experiments/configs/pdns/ising.py:target.size=4,target.beta=0.6,"
    "prox.buffer_size=2048,prox.epsilon=0.3,prox.num_stages=30",
    measure="|log Ẑ − log Z| (nats) of the trained discrete sampler on the 4×4 Ising "
    "lattice at β = 0.6; ESS, P(M<0), E|M| and TV in the details",
    reference=0.0,
    reference_source="exact enumeration / transfer matrix (log Z = "
    "20.056533); pass within 0.1 nats",
    direction="lower",
    threshold=0.1,
    run=_ising4,
  ),
  Claim(
    name="pdns/two_mode_10d",
    method="pdns",
    config="experiments/configs/pdns/two_mode_10d.py",
    measure="|log Ẑ − log Z| (nats) on the 10-D 0.3/0.7 two-mode mixture; mode weights "
    "in "
    "the details",
    reference=0.0,
    reference_source="closed form (log Z = 2 by construction); pass within 0.3 nats",
    direction="lower",
    threshold=0.3,
    run=_mixture,
  ),
  Claim(
    name="pdns/prox_vs_eta_inf",
    method="pdns",
    config="experiments/configs/pdns/ising.py:target.size=4,target.beta=1.0,... "
    "(PDNS) vs the same with the baseline variant; --full: ising.py:laptop (8×8, "
    "β = 0.6, prox.epochs_per_stage=16) vs the same with baseline, seeds 1-5",
    measure="mean |P̂(M<0) − P(M<0)| of the η = ∞ baseline minus that of PDNS over "
    "seeds "
    "(equal budget)",
    reference=0.5,
    reference_source="paper claim (Fig. 1): the baseline collapses onto one "
    "sign (error 0.5), PDNS stays balanced; pass if the advantage is ≥ 0.2",
    direction="higher",
    threshold=0.2,
    run=_ab,
  ),
]
