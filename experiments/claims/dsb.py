"""DSB (CatSBench) claims: solvers and trivial baselines on the benchmark presets, and exact KLs.

Both claims run ``iclr26_jax.dsb.runner.run_table`` (the runner behind
``python -m experiments.dsb_benchmark``) on instances generated in code from seed 0 by the spec §6
recipe (not the released instance files, so numbers compare in magnitude, not digit for digit).

* ``dsb/featurewise_beats_trivial``: every solver and baseline on HD presets, mean ± std over two
  solver seeds, with the truth-vs-truth ceiling row. Value: the smallest margin, over presets, of
  feature-wise EOT's conditional shape over the better of the independent and prior baselines
  (spec §11 expects it positive on every preset).
* ``dsb/tiny_exact_kl``: the enumerable instance (D = 2, S = 6): exact E_{p_0} KL(pi* || pi_theta)
  per solver, including DLightSB-M with the per-coordinate (reference) loss vs the exact joint
  loss. Value: the independent baseline's exact KL over DLightSB's (spec §12: order 1e-1 vs
  1e-3).

CSBM and alpha-CSBM are included when ``iclr26_jax.dsb.solvers.csbm`` / ``.alpha_csbm`` import at
run time; otherwise their rows read "not available".
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

from experiments.claims import Claim, ClaimContext, ClaimResult

_BASELINES = ["truth", "independent", "prior", "featurewise_eot"]
_TRAINED = ["dlightsb", "dlightsb_m", "dlightsb_m_joint", "csbm", "alpha_csbm"]


def _hd_scale(ctx: ClaimContext) -> dict:
  """Presets with their DLightSB-family and CSBM-type step counts, and the evaluation sizes."""
  if ctx.full:
    from iclr26_jax.dsb import benchmark as bm
    return dict(presets={p: (20_000, 20_000, 28_000) for p in sorted(bm.HD_PRESETS)},
                seeds=[0, 1],
                k=1000, num_test=20_000, num_points=157, cond_samples=1000, num_traj=2048)
  # Laptop: steps (DLightSB, DLightSB-M, CSBM-type) per preset. D = 2 trains cheaply, D = 16
  # gets a short run; CSBM-type solvers get a token budget (their numbers at this scale say
  # nothing about the method) and, since their D = 16 training costs minutes on two CPU cores,
  # run on the D = 2 preset only (None = not run; all presets with --full).
  return dict(presets={"hd_d2_s50_prior_gaussian_a0.02": (3000, 1000, 200),
                       "hd_d16_s50_prior_uniform_a0.005": (200, 200, None)},
              seeds=[0, 1], k=32, num_test=1024, num_points=8, cond_samples=500, num_traj=128)


def _overrides(k: int, csbm_steps: int, weight_decay: float | None = None,
               batch: int | None = None, dlightsb_steps: int | None = None) -> dict:
  dl = dict(num_potentials=k)
  if weight_decay is not None:
    dl["weight_decay"] = weight_decay
  if batch is not None:
    dl["batch_size"] = batch
  # CSBM-type solvers at laptop scale: the learning rate of the csbm.py usage example (1e-3; the
  # paper's 1e-4 needs its 280k steps), their own step budget, and the IMF schedule shrunk with
  # it: 8 epochs of csbm_steps / 8 (one independent-coupling cycle, then IMF; the paper's 20k-step
  # epochs would leave the forward model untrained) and EMA 0.99 (0.999 would keep the EMA
  # sampler close to its initialisation over a few hundred steps).
  csbm = dict(train_steps=csbm_steps, learning_rate=1e-3, epoch_steps=max(1, csbm_steps // 8),
              num_first_iterations=1, ema_decay=0.99, weight_decay=0.0)
  first = dict(dl) if dlightsb_steps is None else dict(dl, train_steps=dlightsb_steps)
  return {"dlightsb": first, "dlightsb_m": dict(dl), "dlightsb_m_joint": dict(dl), "csbm": csbm,
          "alpha_csbm": dict(csbm)}


def _run(ctx: ClaimContext, presets, seeds, steps, overrides, pad_to, out_dir=None,
         solvers=None, **eval_kwargs) -> dict:
  from iclr26_jax.dsb import runner
  return runner.run_table(solvers or _BASELINES + _TRAINED, presets, seeds, steps=steps,
                          overrides=overrides, out_dir=out_dir or ctx.outdir, on_error="record",
                          progress=lambda line: print(line, file=sys.stderr, flush=True),
                          pad_to=pad_to, **eval_kwargs)


def _row(result: dict, solver: str, preset: str) -> dict | None:
  for r in result["rows"]:
    if r["solver"] == solver and r["preset"] == preset and "note" not in r:
      return r
  return None


def _mean(row: dict | None, metric: str) -> float:
  if row is None or row.get(metric) is None:
    return float("nan")
  return row[metric][0]


def _featurewise(ctx: ClaimContext) -> ClaimResult:
  from iclr26_jax.dsb import runner
  sc = _hd_scale(ctx)
  rows, presets = [], []
  for preset, (dl_steps, steps, csbm_steps) in sc["presets"].items():
    skip = [] if csbm_steps is not None else ["csbm", "alpha_csbm"]
    solvers = [s for s in _BASELINES + _TRAINED if s not in skip]
    res = _run(ctx, [preset], sc["seeds"], steps,
               _overrides(sc["k"], csbm_steps or 1, dlightsb_steps=dl_steps), sc["k"],
               num_test=sc["num_test"], num_points=sc["num_points"],
               cond_samples=sc["cond_samples"], num_traj=sc["num_traj"],
               out_dir=os.path.join(ctx.outdir, preset), solvers=solvers)
    rows += res["rows"] + [dict(solver=s, preset=res["settings"]["presets"][0],
                                note="not run at laptop scale (--full)") for s in skip]
    presets.append(res["settings"]["presets"][0])
  result = dict(rows=rows, table=runner.format_table(rows))
  with open(os.path.join(ctx.outdir, "table.md"), "w") as f:
    f.write(result["table"] + "\n")
  margins, lines = [], []
  for p in presets:
    fw = _mean(_row(result, "featurewise_eot", p), "cond_shape")
    ind = _mean(_row(result, "independent", p), "cond_shape")
    pri = _mean(_row(result, "prior", p), "cond_shape")
    dl = _mean(_row(result, "dlightsb", p), "cond_shape")
    ceil = _mean(_row(result, "truth", p), "cond_shape")
    fw_t = _mean(_row(result, "featurewise_eot", p), "cond_trend")
    ind_t = _mean(_row(result, "independent", p), "cond_trend")
    pri_t = _mean(_row(result, "prior", p), "cond_trend")
    margins.append(fw - max(ind, pri))
    lines.append(f"- `{p}`: cond shape feature-wise EOT {fw:.3f} vs independent {ind:.3f} / "
                 f"prior {pri:.3f} (margin {fw - max(ind, pri):+.3f}); cond trend {fw_t:.3f} vs "
                 f"{ind_t:.3f} / {pri_t:.3f} (margin {fw_t - max(ind_t, pri_t):+.3f}); DLightSB "
                 f"cond shape {dl:.3f} ({'above' if dl > fw else 'not above'} feature-wise EOT); "
                 f"truth-vs-truth ceiling {ceil:.3f}.")
  value = float(np.min(margins)) if margins and np.all(np.isfinite(margins)) else float("nan")
  steps = "; ".join(f"`{p}`: {a} / {b} / {c if c is not None else 'not run'}"
                    for p, (a, b, c) in sc["presets"].items())
  details = (f"Instances generated in code (instance seed 0), solver seeds {sc['seeds']}. "
             f"Training steps (DLightSB / DLightSB-M / CSBM-type) per preset: {steps}. DLightSB / "
             f"DLightSB-M: K = {sc['k']}, batch 128, AdamW 1e-2 (paper: K = 1000, 100k steps); "
             "CSBM / alpha-CSBM: lr 1e-3 (paper: 280k / 140k steps, lr 1e-4 / 1e-3), so their "
             "laptop rows only show that the pipeline runs. Evaluation: "
             f"{sc['num_test']} test pairs, {sc['num_points']} conditioning points x "
             f"{sc['cond_samples']} samples, trajectory KLs (scaled by D N) on {sc['num_traj']} "
             "sources. Table: `table.md`; per preset `<preset>/results.json` has the per-seed "
             "numbers.\n\n" + "\n".join(lines) + "\n\n" + result["table"])
  return ClaimResult(value, details)


def _tiny(ctx: ClaimContext) -> ClaimResult:
  steps = 3000 if ctx.full else 1000
  csbm_steps = 20_000 if ctx.full else 2000
  seeds = [0, 1, 2] if ctx.full else [0, 1]
  preset = "tiny_d2_s6_uniform"
  result = _run(ctx, [preset], seeds, steps,
                _overrides(8, csbm_steps, weight_decay=0.0, batch=256), 8, num_test=1024,
                num_points=8, cond_samples=500, num_traj=128)
  kl = {s: _mean(_row(result, s, preset), "exact_kl") for s in _BASELINES + _TRAINED}
  sd = {}
  for s in _BASELINES + _TRAINED:
    row = _row(result, s, preset)
    sd[s] = row["exact_kl"][1] if row is not None and row.get("exact_kl") is not None else np.nan
  value = kl["independent"] / kl["dlightsb"] if kl["dlightsb"] > 0 else float("nan")
  lines = [f"- {s}: exact KL {kl[s]:.3g} ± {sd[s]:.2g}" for s in kl if np.isfinite(kl[s])]
  bias = (f"DLightSB-M per-coordinate KL loss {kl['dlightsb_m']:.3g} vs exact joint loss "
          f"{kl['dlightsb_m_joint']:.3g} vs DLightSB {kl['dlightsb']:.3g}. Spec §8.2 places the "
          "per-coordinate loss's population optimum at an exact KL of order 1e-3 under the "
          "independent coupling and the joint loss's at 0; at this step count the optimisation "
          "noise of each run is of the same order, so the comparison says which effect dominates "
          "here, not the asymptotic bias (tests/dsb/test_dsb_solvers.py checks the non-zero "
          "population gradient exactly).")
  details = (f"Instance `{preset}` (D = 2, S = 6, N = 3, uniform reference, random rank-3 "
             f"potential, seed 0; 1296 enumerated pairs). DLightSB / DLightSB-M: K = 8, {steps} "
             f"steps, batch 256, AdamW 1e-2 without weight decay, independent coupling; CSBM-type:"
             f" {csbm_steps} steps, lr 1e-3, exact plan by composing the enumerated per-coordinate "
             f"transitions. Seeds {seeds}.\n\n" + "\n".join(lines) + "\n\n" + bias + "\n\n"
             + result["table"])
  with open(os.path.join(ctx.outdir, "exact_kl.json"), "w") as f:
    json.dump({s: [kl[s], sd[s]] for s in kl if np.isfinite(kl[s])}, f, indent=2)
  return ClaimResult(float(value), details)


CLAIMS = [
    Claim(name="dsb/featurewise_beats_trivial", method="dsb",
          config="iclr26_jax/dsb/runner.py run_table (all solvers; HD presets D = 2, 16 at laptop "
                 "scale, all 12 with --full)",
          measure="min over presets of feature-wise EOT's cond shape minus max(independent, "
                  "prior) cond shape, mean over 2 seeds",
          reference=0.205, reference_source="spec §11 (paper's baseline notebook, D2 g.02: "
          ".712 vs .507); positive on every released preset", direction="higher",
          threshold=0.0, run=_featurewise),
    Claim(name="dsb/tiny_exact_kl", method="dsb",
          config="iclr26_jax/dsb/runner.py run_table on tiny_d2_s6_uniform",
          measure="exact E_{p0} KL(pi*||pi) of the independent coupling over DLightSB's, by "
                  "enumeration",
          reference=100.0, reference_source="spec §12: DLightSB ~1e-3, independent ~1e-1",
          direction="higher", threshold=10.0, run=_tiny),
]
