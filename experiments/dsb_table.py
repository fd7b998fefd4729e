"""The DSB benchmark table: every (preset, solver, seed) through ``evaluation.evaluate_solver``,
aggregated as mean ± std over seeds into Markdown (``run_table``, ``format_table``).

Nothing here writes a file: ``python -m experiments.dsb_benchmark --out=DIR`` writes the table and
``results.json`` (``jsonable`` turns a result into JSON types).
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable

import numpy as np

from iclr26_jax.dsb.benchmark import resolve_preset
from iclr26_jax.dsb.evaluation import (
  METRIC_DIRECTIONS,
  METRICS,
  REFERENCES,
  SOLVERS,
  check_solver,
  evaluate_solver,
  prepare_preset,
)

__all__ = ["run_table", "format_table", "jsonable"]


def _aggregate(runs: list[dict]) -> dict[str, Any]:
  row: dict[str, Any] = dict(
    solver=runs[0]["solver"], preset=runs[0]["preset"], seeds=[r["seed"] for r in runs]
  )
  for m in METRICS + ("train_seconds",):
    vals = np.asarray([r[m] for r in runs], np.float64)
    if np.isfinite(vals).all():
      row[m] = (float(vals.mean()), float(vals.std()))
    elif (vals == np.inf).all():
      row[m] = (float("inf"), 0.0)  # an infinite KL (the identity map's), not an undefined one
    else:
      row[m] = None
  return row


def _cell(value) -> str:
  if value is None:
    return "—"
  mean, std = value
  if mean == float("inf"):
    return "∞"
  digits = 3 if abs(mean) >= 0.01 or mean == 0 else 4
  return f"{mean:.{digits}f} ± {std:.{digits}f}" if digits == 3 else f"{mean:.2e} ± {std:.1e}"


def format_table(rows: list[dict]) -> str:
  """Markdown table of aggregated rows (metric columns that are "—" in every row are dropped).

  Rows with a ``note`` (unavailable solvers, errors) show it in place of the metrics. A footnote
  says which way each shown metric is better (``METRIC_DIRECTIONS``) and, when the table holds
  any of ``REFERENCES``, how to read a solver against those rows.
  """
  metric_rows = [r for r in rows if "note" not in r]
  cols = [m for m in METRICS if any(r.get(m) is not None for r in metric_rows)]
  cols = cols + ["train_seconds"]
  head = ["preset", "solver"] + [c.replace("_", " ") for c in cols]
  lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
  for r in rows:
    if "note" in r:
      cells = [r["note"]] + [""] * (len(cols) - 1)
    else:
      cells = [_cell(r.get(c)) for c in cols]
    lines.append("| " + " | ".join([r["preset"], r["solver"]] + cells) + " |")
  lines.append("")

  def named(direction):
    return ", ".join(c.replace("_", " ") for c in cols if METRIC_DIRECTIONS.get(c) == direction)

  notes = ["mean ± std over seeds."]
  if named("higher"):
    notes.append(
      f"Higher is better for {named('higher')} (1 = indistinguishable from the truth; the "
      "truth row sits below 1 by sampling noise only)."
    )
  if named("lower"):
    notes.append(f"Lower is better for {named('lower')} (0 = the truth).")
  if named("truth"):
    notes.append(
      f"For {named('truth')} the closest to the truth row's value is best (neither lower nor "
      "higher is better)."
    )
  notes.append("— = not defined for the solver; ∞ = infinite (the identity map's KLs).")
  if any(r["solver"] in REFERENCES for r in rows):
    notes.append(
      "Reference rows: truth (the exact plan: an exact sampler's scores), identity (y = x_0) and "
      "independent (y ~ p_1, ignoring x_0); a solver is useful where it sits clearly nearer "
      "the truth row than both trivial maps."
    )
  lines.append(" ".join(notes))
  return "\n".join(lines)


def run_table(
  solvers: list[str],
  presets: list[str],
  seeds: list[int],
  *,
  steps: int | None = None,
  overrides: dict[str, dict] | None = None,
  on_error: str = "raise",
  progress: Callable[[str], None] | None = print,
  preset_kwargs: dict[str, dict] | None = None,
  pad_to: int = 0,
  references: bool = False,
  **prepare_kwargs: Any,
) -> dict[str, Any]:
  """Evaluates every (preset, solver, seed) and aggregates mean ± std over seeds.

  Args:
    solvers: names from ``SOLVERS``.
    presets: preset names or aliases.
    seeds: solver seeds.
    steps: train_steps of the trained solvers.
    overrides: {solver name: config overrides}.
    on_error: "raise" or "record" (a failing (solver, preset) gets an error row).
    progress: called with one line per (solver, preset, seed); None silences.
    preset_kwargs: {preset name: extra ``prepare_preset`` arguments} (e.g. source_samples).
    pad_to: see ``evaluate_solver``.
    references: put the ``REFERENCES`` rows (truth, identity, independent) that ``solvers``
      does not name first, so every solver's row is read beside them.
    **prepare_kwargs: ``prepare_preset`` arguments shared by all presets.

  Returns:
    {"rows": aggregated rows, "runs": per-seed rows, "table": Markdown text, "settings": ...};
    nothing is written (``python -m experiments.dsb_benchmark --out=DIR`` writes ``table.md`` and
    ``results.json``; ``jsonable`` turns the result into JSON types).
  """
  if on_error not in ("raise", "record"):
    raise ValueError(f"on_error must be 'raise' or 'record', got {on_error!r}")
  solvers = list(solvers)
  for s in solvers:
    check_solver(s)
  if references:
    solvers = [r for r in REFERENCES if r not in solvers] + solvers
  canon = [resolve_preset(p) for p in presets]
  seeds = [int(s) for s in seeds]
  if not solvers or not canon or not seeds:
    raise ValueError("solvers, presets and seeds must each name at least one entry")
  overrides = dict(overrides or {})
  for k in overrides:
    check_solver(k)
  preset_kwargs = {resolve_preset(k): v for k, v in (preset_kwargs or {}).items()}
  say = progress or (lambda line: None)
  rows, runs = [], []
  for preset in canon:
    t0 = time.time()
    ctx = prepare_preset(preset, **{**prepare_kwargs, **preset_kwargs.get(preset, {})})
    say(
      f"[dsb] preset {preset}: D={ctx.bench.dim} S={ctx.bench.num_categories} "
      f"N={ctx.bench.num_steps} eval set ready in {time.time() - t0:.1f} s"
    )
    for name in solvers:
      if ctx.bench.reverse and not SOLVERS[name].supports_reverse:
        rows.append(dict(solver=name, preset=preset, note="not supported on reversed presets"))
        continue
      seed_runs = []
      try:
        for seed in seeds:
          r = evaluate_solver(
            name, ctx, seed, steps=steps, overrides=overrides.get(name), pad_to=pad_to
          )
          seed_runs.append(r)
          say(
            f"[dsb] {name} on {preset} seed {seed}: train {r['train_seconds']:.1f} s"
            f", eval {r['eval_seconds']:.1f} s, cond_shape {r['cond_shape']:.3f}, "
            f"traj_kl_fwd {r['traj_kl_fwd']:.3g}, exact_kl {r['exact_kl']:.3g}"
          )
      except Exception as e:  # noqa: BLE001 — recorded when asked to
        if on_error == "raise":
          raise
        rows.append(
          dict(solver=name, preset=preset, note=f"error: {type(e).__name__}: {str(e)[:200]}")
        )
        say(f"[dsb] {name} on {preset}: error {type(e).__name__}: {e}")
        continue
      runs.extend(seed_runs)
      rows.append(_aggregate(seed_runs))
  table = format_table(rows)
  settings = dict(
    solvers=solvers,
    presets=canon,
    seeds=seeds,
    steps=steps,
    overrides=overrides,
    **{k: v for k, v in prepare_kwargs.items() if k != "source_samples"},
  )
  return dict(rows=rows, runs=runs, table=table, settings=settings)


def jsonable(x: Any) -> Any:
  """``x`` (a ``run_table`` result, or any of its parts) with only JSON types: tuples as lists,
  numpy scalars as Python numbers, NaN and infinities as None."""
  if isinstance(x, dict):
    return {str(k): jsonable(v) for k, v in x.items()}
  if isinstance(x, (list, tuple)):
    return [jsonable(v) for v in x]
  if isinstance(x, (float, np.floating)):
    return None if not math.isfinite(float(x)) else float(x)
  if isinstance(x, (np.integer,)):
    return int(x)
  return x
