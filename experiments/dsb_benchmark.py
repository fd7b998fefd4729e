"""Command line for the DSB benchmark runner (``experiments.dsb_table``).

  python -m experiments.dsb_benchmark --solvers=dlightsb,independent \\
      --presets=hd_d2_s50_prior_gaussian_a0.02 --seeds=0,1 --steps=500 --out=/tmp/dsb_table \\
      --set=dlightsb.num_potentials=64

Trains every solver on every preset for every seed, prints the Markdown table (mean ± std over
seeds) and writes ``table.md`` and ``results.json`` into ``--out``. Solvers: truth, identity,
independent, prior, featurewise_eot, dlightsb, dlightsb_m, dlightsb_m_joint, csbm, alpha_csbm. Every
preset's rows start with the reference rows truth (the exact plan: an exact sampler's scores),
identity (y = x_0) and independent (y ~ p_1 ignoring x_0), so each solver is read against the scale
of that preset; ``--noreferences`` leaves out those not named in ``--solvers``. The table's footnote
says which way each metric is better (the SB perplexity: closest to the truth row's value). Presets:
the HD names ``hd_d{2,16,64}_s50_prior_{gaussian,uniform}_a{alpha}`` (the former short names such as
``gaussian_d2_a002`` still work, with a FutureWarning) and the enumerable ``tiny_d2_s6_uniform`` /
``tiny_d2_s10_uniform`` (one preset table, ``iclr26_jax.dsb.benchmark.PRESETS``). The metric columns
are ``iclr26_jax.dsb.evaluation.METRICS``, the names ``experiments.main`` logs as ``eval/...``;
trend in the catsbench 1.4 (off-diagonal) convention.
"""

import ast
import os
import sys

from absl import app, flags

_SOLVERS = flags.DEFINE_list(
  "solvers", ["independent", "prior", "featurewise_eot", "dlightsb"], "Solver names."
)
_PRESETS = flags.DEFINE_list(
  "presets", ["hd_d2_s50_prior_gaussian_a0.02"], "Preset names (dsb.PRESETS)."
)
_SEEDS = flags.DEFINE_list("seeds", ["0"], "Solver seeds.")
_STEPS = flags.DEFINE_integer(
  "steps", None, "train_steps of the trained solvers (default: each solver's paper default)."
)
_OUT = flags.DEFINE_string("out", "dsb_benchmark_out", "Output directory.")
_SET = flags.DEFINE_multi_string(
  "set", [], "Solver override solver.field=value (repeatable), e.g. dlightsb.num_potentials=64."
)
_NUM_TEST = flags.DEFINE_integer("num_test", 4096, "Test pairs per preset (paper: 20000).")
_NUM_POINTS = flags.DEFINE_integer("num_points", 16, "Conditioning points (paper: 157).")
_COND = flags.DEFINE_integer("cond_samples", 1000, "Conditional samples per point.")
_NUM_TRAJ = flags.DEFINE_integer("num_traj", 512, "Test sources for the trajectory KLs.")
_INSTANCE = flags.DEFINE_integer("instance_seed", 0, "Benchmark instance seed.")
_REFERENCES = flags.DEFINE_bool(
  "references",
  True,
  "Add the reference rows truth, identity and independent to every preset (those not in "
  "--solvers).",
)
_RECORD = flags.DEFINE_bool(
  "record_errors", False, "Record failing solvers as table rows instead of stopping."
)


def parse_overrides(items: list[str]) -> dict[str, dict]:
  """['dlightsb.num_potentials=64', ...] -> {'dlightsb': {'num_potentials': 64}}."""
  out: dict[str, dict] = {}
  for item in items:
    key, sep, value = item.partition("=")
    solver, dot, field = key.partition(".")
    if not sep or not dot or not solver or not field:
      raise ValueError(f"--set expects solver.field=value, got {item!r}")
    try:
      parsed = ast.literal_eval(value)
    except (ValueError, SyntaxError):
      parsed = value
    out.setdefault(solver, {})[field] = parsed
  return out


def main(argv):
  del argv
  from experiments.dsb_results import write_results
  from experiments import dsb_table as runner

  try:
    seeds = [int(s) for s in _SEEDS.value]
  except ValueError:
    raise app.UsageError(f"--seeds must be integers, got {_SEEDS.value}") from None
  try:
    result = runner.run_table(
      _SOLVERS.value,
      _PRESETS.value,
      seeds,
      steps=_STEPS.value,
      overrides=parse_overrides(_SET.value),
      on_error="record" if _RECORD.value else "raise",
      progress=lambda line: print(line, file=sys.stderr, flush=True),
      num_test=_NUM_TEST.value,
      num_points=_NUM_POINTS.value,
      cond_samples=_COND.value,
      num_traj=_NUM_TRAJ.value,
      instance_seed=_INSTANCE.value,
      references=_REFERENCES.value,
    )
  except ValueError as e:
    raise app.UsageError(str(e)) from e
  write_results(result, _OUT.value)
  print(result["table"])
  print(f"wrote {_OUT.value}/table.md and {_OUT.value}/results.json", file=sys.stderr)


if __name__ == "__main__":
  # Also run as a file (python experiments/<name>.py): the repository root on the path first.
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  from experiments import _cli

  _cli.app_run(main)
