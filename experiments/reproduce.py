"""The main job: run every registered claim at laptop scale and write ``REPORT.md``.

  python -m experiments.reproduce [--only=METHOD|CLAIM[,...]] [--out=DIR] [--full]

Each claim runs in ``<out>/<claim name>/``; the report is a table (claim, reference, ours,
pass/fail, seconds) followed by each claim's details and plots. A claim that raises is
reported as FAIL with its error; the others still run. Exit status 0 when the report is
written (the verdicts are in the report; ``--strict`` exits 1 if any claim failed).
"""

import json
import os
import shutil
import sys
import time
import traceback

from absl import app, flags, logging

_ONLY = flags.DEFINE_list(
  "only",
  [],
  "Methods or claims to run (e.g. lmkan,dsb or "
  "qam/ogbench_puzzle3x3); default all. An unknown name is an error that "
  "lists the known ones.",
)
_OUT = flags.DEFINE_string("out", "reproduce_out", "Output directory for REPORT.md and plots.")
_FULL = flags.DEFINE_bool("full", False, "Run the larger versions of the claims.")
_SEED = flags.DEFINE_integer("seed", 0, "Seed passed to every claim.")
_STRICT = flags.DEFINE_bool("strict", False, "Exit with status 1 if any claim fails.")
_CACHE = flags.DEFINE_string(
  "compile_cache",
  None,
  "JAX persistent compilation cache directory (default <out>/.jax_cache;"
  " '' disables). Runs of the same shapes (seeds, repeated reports) then compile once.",
)


def _fmt(x) -> str:
  if isinstance(x, float):
    return f"{x:.4g}"
  return str(x)


def write_report(out: str, rows: list[dict], full: bool, total_s: float) -> str:
  """Writes ``REPORT.md`` and ``results.json`` into ``out``; returns the report path."""
  lines = [
    "# iclr26_jax reproduce report",
    "",
    f"Scale: {'full' if full else 'laptop (default)'}; {len(rows)} claim(s); "
    f"total {total_s:.1f} s.",
    "",
  ]
  if not rows:
    lines += [
      "No claims are registered yet (or none matched `--only`). Method rooms add "
      "theirs in `experiments/claims/<method>.py`.",
      "",
    ]
  else:
    lines += ["| claim | reference | ours | pass | seconds |", "| --- | --- | --- | --- | --- |"]
    for r in rows:
      ref = f"{_fmt(r['reference'])} ({r['direction']} than {_fmt(r['threshold'])} passes)"
      lines.append(
        f"| {r['name']} | {ref} | {_fmt(r['value'])} | "
        f"{'PASS' if r['passed'] else 'FAIL'} | {r['seconds']:.1f} |"
      )
    lines.append("")
    for r in rows:
      lines += [
        f"## {r['name']}",
        "",
        f"- config: `{r['config']}`",
        f"- measured: {r['measure']}",
        f"- reference: {_fmt(r['reference'])} — {r['reference_source']}",
        "",
      ]
      if r["details"]:
        lines += [r["details"], ""]
      if r.get("error"):
        lines += ["```", r["error"].rstrip(), "```", ""]
      for p in r["plots"]:
        lines.append(f"![{os.path.basename(p)}]({os.path.relpath(p, out)})")
      lines.append("")
  path = os.path.join(out, "REPORT.md")
  with open(path, "w") as f:
    f.write("\n".join(lines))
  with open(os.path.join(out, "results.json"), "w") as f:
    json.dump(rows, f, indent=2)
  return path


def run_claims(claims, out: str, full: bool, seed: int) -> list[dict]:
  """Runs each claim with a progress bar; returns one row per claim."""
  from tqdm.auto import tqdm

  from experiments.claims import ClaimContext

  rows = []
  bar = tqdm(claims, desc="claims", unit="claim", file=sys.stderr)
  for claim in bar:
    bar.set_postfix_str(claim.name)
    cdir = os.path.join(out, claim.name.replace("/", "__"))
    shutil.rmtree(cdir, ignore_errors=True)  # every report is a fresh measurement
    os.makedirs(cdir, exist_ok=True)
    t0 = time.time()
    error = None
    try:
      res = claim.run(ClaimContext(outdir=cdir, full=full, seed=seed))
      value, details, plots = float(res.value), res.details, list(res.plots)
    except Exception:  # noqa: BLE001 — report the failure, keep running the others.
      value, details, plots = float("nan"), "The claim raised an error.", []
      error = traceback.format_exc()
    secs = time.time() - t0
    row = dict(
      name=claim.name,
      method=claim.method,
      config=claim.config,
      measure=claim.measure,
      reference=claim.reference,
      reference_source=claim.reference_source,
      direction=claim.direction,
      threshold=claim.threshold,
      value=value,
      passed=claim.passed(value),
      seconds=secs,
      details=details,
      plots=plots,
      error=error,
    )
    rows.append(row)
    bar.write(
      f"{'PASS' if row['passed'] else 'FAIL'} {claim.name}: {_fmt(value)} "
      f"(reference {_fmt(claim.reference)}) in {secs:.1f} s",
      file=sys.stderr,
    )
  return rows


def select_claims(claims: list, only: list[str]) -> list:
  """The claims named by ``only``: each entry a method (``qam``: all of its claims) or one claim
  (``qam/ogbench_puzzle3x3``), in registry order. Raises ValueError naming the unknown entries
  and listing the known methods and claim names."""
  methods = {c.method for c in claims}
  names = {c.name for c in claims}
  unknown = [m for m in only if m not in methods and m not in names]
  if unknown:
    raise ValueError(
      f"--only names unknown method(s) or claim(s) {unknown}; methods with claims: "
      f"{','.join(sorted(methods))}; claims: {','.join(c.name for c in claims)}"
    )
  return [c for c in claims if c.method in only or c.name in only]


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)
  from experiments.claims import all_claims

  claims = all_claims()
  if _ONLY.value:
    try:
      claims = select_claims(claims, _ONLY.value)
    except ValueError as e:
      print(f"error: {e}", file=sys.stderr)
      sys.exit(2)
  out = os.path.abspath(_OUT.value)
  os.makedirs(out, exist_ok=True)
  cache = os.path.join(out, ".jax_cache") if _CACHE.value is None else _CACHE.value
  if cache:
    import jax

    jax.config.update("jax_compilation_cache_dir", cache)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
  if not claims:
    print("no claims registered" + (f" for {_ONLY.value}" if _ONLY.value else ""), file=sys.stderr)
  t0 = time.time()
  rows = run_claims(claims, out, _FULL.value, _SEED.value)
  path = write_report(out, rows, _FULL.value, time.time() - t0)
  n_pass = sum(r["passed"] for r in rows)
  print(f"wrote {path}: {n_pass}/{len(rows)} claims pass", file=sys.stderr)
  if _STRICT.value and n_pass < len(rows):
    sys.exit(1)


if __name__ == "__main__":
  app.run(main)
