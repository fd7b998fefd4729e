r"""Benchmark: training iterations per second of the DSB solvers.

DLightSB / DLightSB-M / CSBM / alpha-CSBM from "Entering the Era of Discrete Diffusion Models: A
Benchmark for Schrödinger Bridges and Entropic Optimal Transport" (Aramayo Carrasco et al.,
ICLR 2026; reference code github.com/gregkseno/catsbench). One compiled ``lax.scan`` chunk of ``--chunk`` optimiser
steps of the solver's own training step (fresh p_0 / p_1 draws, loss, gradient, AdamW update) is
timed; ``ms/step`` is the median wall time per optimiser step and ``CPU ms/step`` the median
process CPU time (``time.process_time``, all threads) per step, so a multi-threaded backend shows
CPU > wall. The DLightSB-family solvers are timed once per ``--lse`` path (``lse_impl`` of their
config: ``broadcast`` = the D S^2 K log-sum-exp tables (the earlier path), ``auto`` = the
max-shifted matmul for K >= 16), all paths of a solver in alternating rounds of the same run;
``vs first`` is the first path's time over this one's (wall). The default instance
is the paper's largest HD setting: preset ``hd_d64_s50_prior_gaussian_a0.02`` (D = 64, S = 50,
N = 15, s = 8) with a learned potential of K = 1000 components and batch 128. CSBM and alpha-CSBM
(SimpleMLP 3 x 128) are timed in their IMF phase (``num_first_iterations=0``), whose steps include
the (N+1)-step EMA-model rollouts (alpha-CSBM: two half-batch rollouts and both directions' update
per step). The ``rel`` column is each row's steps/s relative to the first row, measured in the same
run. ``temp MiB`` is XLA's compiled temporary-buffer size of the timed chunk (the
memory peak beyond arguments and outputs, from ``Compiled.memory_analysis()``); the last line
compiles the DLightSB step once more with the log-sum-exp contraction unchunked
(``chunk_elements`` = 2^62) to show what the chunking saves.

Run from the repository root:
  python -m benchmarks.dsb_solvers --quick        # DLightSB only, 2-step chunk, 2 reps
  python -m benchmarks.dsb_solvers --solvers dlightsb,joint,kl --chunk 5
  python -m benchmarks.dsb_solvers --solvers dlightsb,alpha_csbm,csbm
  # the speed-up target of the matmul path (DLightSB K = 1000, D = 16, B = 128, S = 50), one thread:
  JAX_PLATFORMS=cpu XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \
    taskset -c 0 python -m benchmarks.dsb_solvers --preset hd_d16_s50_prior_gaussian_a0.02 \
    --solvers dlightsb --reps 5
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import types

if __package__ in (None, ""):  # run as a file: make the repository root importable
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app, flags  # pylint: disable=g-import-not-at-top

from experiments import _cli  # pylint: disable=g-import-not-at-top
import jax  # pylint: disable=g-import-not-at-top

from iclr26_jax.dsb import benchmark as bm
from iclr26_jax.dsb.solvers import csbm
from iclr26_jax.dsb.solvers import dlightsb as dls
from iclr26_jax.dsb.solvers.alpha_csbm import AlphaCSBM, AlphaCSBMConfig
from iclr26_jax.dsb.solvers.csbm import CSBM, CSBMConfig
from iclr26_jax.dsb.solvers.dlightsb import DLightSB, DLightSBConfig
from iclr26_jax.dsb.solvers.dlightsb_m import DLightSBM, DLightSBMConfig

_SOLVERS = ("dlightsb", "joint", "kl", "mse", "csbm", "alpha_csbm")
_CP_SOLVERS = ("dlightsb", "joint", "kl", "mse")  # solvers with CP log-sum-exp tables
_LABELS = {"dlightsb": "DLightSB", "csbm": "CSBM", "alpha_csbm": "alpha-CSBM"}


def _solver(name: str, common: dict, num_potentials: int, lse_impl: str = "auto"):
  steps = dict(
    batch_size=common["batch_size"],
    train_steps=common["train_steps"],
    steps_per_chunk=common["steps_per_chunk"],
  )
  if name == "csbm":
    return CSBM(CSBMConfig(**steps, num_first_iterations=0))
  if name == "alpha_csbm":
    return AlphaCSBM(AlphaCSBMConfig(**steps, num_first_iterations=0))
  if name == "dlightsb":
    return DLightSB(DLightSBConfig(**common, num_potentials=num_potentials, lse_impl=lse_impl))
  return DLightSBM(
    DLightSBMConfig(**common, num_potentials=num_potentials, loss=name, lse_impl=lse_impl)
  )


def _time_paths(calls: dict, warmup: int, reps: int) -> dict:
  """{label: (median wall s, median CPU s)} per call of ``calls`` ({label: (fn, args)}), timed
  in alternating rounds (one call of each label per round) after ``warmup`` calls each."""
  for fn, fn_args in calls.values():
    for _ in range(warmup):
      jax.block_until_ready(fn(*fn_args))
  wall = {k: [] for k in calls}
  cpu = {k: [] for k in calls}
  for _ in range(reps):
    for k, (fn, fn_args) in calls.items():
      w0, c0 = time.perf_counter(), time.process_time()
      jax.block_until_ready(fn(*fn_args))
      wall[k].append(time.perf_counter() - w0)
      cpu[k].append(time.process_time() - c0)
  return {k: (statistics.median(wall[k]), statistics.median(cpu[k])) for k in calls}


def _timed_chunk(solver, bench):
  """(jitted chunk fn, its arguments) of one solver's own training step."""
  cfg = solver.config
  # No donation here: the same state is fed to every timed call.
  if isinstance(solver, CSBM):
    return (
      jax.jit(csbm.train_chunk, static_argnums=(2, 3)),
      (solver.init_state(bench, jax.random.key(0)), bench, cfg, solver.step_fn),
    )
  return (
    jax.jit(dls.train_chunk, static_argnums=(2, 3)),
    (dls.init_state(bench, jax.random.key(0), cfg), bench, cfg, solver.loss_fn),
  )


def _temp_mib(fn, fn_args) -> float:
  """Compiled temporary-buffer size of ``fn(*fn_args)`` in MiB (NaN where unavailable)."""
  try:
    return fn.lower(*fn_args).compile().memory_analysis().temp_size_in_bytes / 2**20
  except Exception:  # pylint: disable=broad-except  (some backends report no analysis)
    return float("nan")


NAMES = ("preset", "num_potentials", "batch", "chunk", "solvers", "lse", "warmup", "reps", "quick")


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
  """Defines this tool's flags in ``fv`` (called only when the file is the program)."""
  flags.DEFINE_string(
    "preset",
    "hd_d64_s50_prior_gaussian_a0.02",
    "High-dimensional benchmark preset (iclr26_jax.dsb.benchmark.HD_PRESETS).",
    flag_values=fv,
  )
  flags.DEFINE_integer(
    "num_potentials",
    1000,
    "K, potentials of the DLightSB-family solvers.",
    lower_bound=1,
    flag_values=fv,
  )
  flags.DEFINE_integer("batch", 128, "B, batch size.", lower_bound=1, flag_values=fv)
  flags.DEFINE_integer("chunk", 5, "Optimiser steps per timed call.", lower_bound=1, flag_values=fv)
  flags.DEFINE_string(
    "solvers",
    "dlightsb,joint,kl,alpha_csbm",
    f"Comma-separated subset of {_SOLVERS} (joint/kl/mse = DLightSB-M).",
    flag_values=fv,
  )
  flags.DEFINE_string(
    "lse",
    "broadcast,auto",
    "Comma-separated lse_impl paths timed for the DLightSB-family solvers "
    "(broadcast = D S^2 K exponentials per step; auto = matmul for K >= 16; matmul).",
    flag_values=fv,
  )
  flags.DEFINE_integer(
    "warmup", 1, "Warm-up calls per solver before timing.", lower_bound=0, flag_values=fv
  )
  flags.DEFINE_integer(
    "reps", 3, "Timed calls per solver (median reported).", lower_bound=1, flag_values=fv
  )
  flags.DEFINE_bool("quick", False, "DLightSB only, 2-step chunk, 2 reps.", flag_values=fv)


def main(argv, fv: flags.FlagValues = flags.FLAGS):
  _cli.no_arguments(argv)
  args = types.SimpleNamespace(**_cli.values(fv, NAMES))
  if args.quick:
    args.solvers, args.chunk, args.reps, args.warmup = "dlightsb", 2, 2, 1
  names = [n for n in args.solvers.split(",") if n]
  bad = [n for n in names if n not in _SOLVERS]
  if bad or not names:
    raise app.UsageError(
      f"--solvers must be a comma-separated subset of {_SOLVERS}, got {args.solvers!r}"
    )
  if args.preset not in bm.HD_PRESETS:
    raise app.UsageError(f"--preset must be one of {sorted(bm.HD_PRESETS)}")
  paths = [p for p in args.lse.split(",") if p]
  if not paths or any(p not in bm.LSE_IMPLS for p in paths):
    raise app.UsageError(f"--lse must be a comma-separated subset of {bm.LSE_IMPLS}")

  bench = bm.make_preset(args.preset, seed=0)
  common = dict(batch_size=args.batch, train_steps=args.chunk, steps_per_chunk=args.chunk)
  print(
    f"backend={jax.default_backend()} device={jax.devices()[0].device_kind} "
    f"preset={args.preset} D={bench.dim} S={bench.num_categories} N={bench.num_steps} "
    f"K={args.num_potentials} B={args.batch} chunk={args.chunk} reps={args.reps} (median)"
  )
  header = (
    f"{'solver':<16} {'lse':<9} {'ms/step':>9} {'CPU ms/step':>11} {'steps/s':>8} "
    f"{'rel':>6} {'vs first':>8} {'temp MiB':>9}"
  )
  print(header)
  print("-" * len(header))
  first = None
  for name in names:
    label = _LABELS.get(name, f"DLightSB-M/{name}")
    impls = paths if name in _CP_SOLVERS else ["-"]
    calls = {
      impl: _timed_chunk(_solver(name, common, args.num_potentials, impl), bench)
      if impl != "-"
      else _timed_chunk(_solver(name, common, args.num_potentials), bench)
      for impl in impls
    }
    times = _time_paths(calls, args.warmup, args.reps)
    path_first = None
    for impl, (wall, cpu) in times.items():
      sec, cpu_sec = wall / args.chunk, cpu / args.chunk
      first = sec if first is None else first
      path_first = sec if path_first is None else path_first
      print(
        f"{label:<16} {impl:<9} {1e3 * sec:>9.1f} {1e3 * cpu_sec:>11.1f} {1.0 / sec:>8.3f} "
        f"{first / sec:>6.2f} {path_first / sec:>8.2f} {_temp_mib(*calls[impl]):>9.1f}",
        flush=True,
      )
  chunked = DLightSB(
    DLightSBConfig(**common, num_potentials=args.num_potentials, lse_impl="broadcast")
  )
  unchunked = DLightSB(chunked.config.replace(chunk_elements=1 << 62))
  mib = [_temp_mib(*_timed_chunk(sv, bench)) for sv in (chunked, unchunked)]
  print(
    f"DLightSB broadcast-LSE contraction temp MiB: chunked ({chunked.config.chunk_elements} elements per "
    f"chunk) {mib[0]:.1f} vs unchunked {mib[1]:.1f} ({mib[1] / mib[0]:.1f}x)",
    flush=True,
  )


if __name__ == "__main__":
  define_flags()
  _cli.run(main)
