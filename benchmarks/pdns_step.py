r"""Benchmark: PDNS training-step throughput, continuous (GMM-40) and discrete (Ising 16 x 16).

PDNS (Guo et al., ICLR 2026, arXiv 2510.03824). The timed unit is one full proximal stage of
``PDNSMethod.update`` (the step the shared trainer runs) scanned in one compiled call: the stage
boundary (rollout of the frozen EMA model over the whole buffer, step-size solve, weights) plus
``steps_per_stage`` minibatch WDCE steps, so steps/s is the amortised rate of a real run. For
each sampler it prints the compile time (lower + compile, separate from the timings) and the
steps/s of

  * 1 seed, and
  * S seeds vmapped in one compiled call (the step counter is shared and left unbatched, so the
    stage-boundary ``lax.cond`` stays a branch instead of becoming a select that would roll out
    every step),

with the ratio (S-seed seed-steps/s over 1-seed steps/s) measured in the same run.

Run from the repository root:
  python -m benchmarks.pdns_step --quick
  python -m benchmarks.pdns_step --seeds 8
"""

from __future__ import annotations

import os
import sys
import time
import types

if __package__ in (None, ""):  # run as a file: make the repository root importable
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import flags  # pylint: disable=g-import-not-at-top

from experiments import _cli  # pylint: disable=g-import-not-at-top
from benchmarks._timing import median_time  # pylint: disable=g-import-not-at-top
import jax

from experiments.configs.pdns import gmm40, ising
from iclr26_jax.pdns.method import PDNSMethod


def _configs(quick: bool) -> list[tuple[str, object]]:
  """(label, config) for the continuous and the discrete sampler."""
  if quick:
    g = gmm40.get_config(
      "prox.buffer_size=512,batch_size=128,prox.epochs_per_stage=2,"
      "sampler.sde_steps=20,sampler.hidden=64,sampler.depth=2"
    )
    i = ising.get_config(
      "target.size=16,prox.buffer_size=256,batch_size=64,"
      "prox.epochs_per_stage=2,sampler.hidden=64,sampler.replicates=2"
    )
  else:
    g = gmm40.get_config("prox.buffer_size=2048,batch_size=512,prox.epochs_per_stage=2")
    i = ising.get_config(
      "target.size=16,prox.buffer_size=1024,batch_size=256,prox.epochs_per_stage=2"
    )
  return [("GMM-40 d=50 (SDE)", g), ("Ising 16x16 (masked CTMC)", i)]


def _stage_runner(method: PDNSMethod):
  """``run(state) -> state``: one stage of ``method.update`` in a ``lax.scan``."""
  sps = method.steps_per_stage

  def run(state):
    def one(st, _):
      st, _ = method.update(st, {})
      return st, None

    return jax.lax.scan(one, state, None, length=sps)[0]

  return run


def _axes(state):
  """vmap axes for a batch of states: every leaf on axis 0 except the shared step counter."""
  axes = jax.tree_util.tree_map(lambda _: 0, state)
  return axes.replace(step=None)


def _bench(label, cfg, seeds: int, warmup: int, reps: int) -> None:
  method = PDNSMethod(cfg)
  sps = method.steps_per_stage
  run = _stage_runner(method)
  state1 = jax.jit(method.init_state)(jax.random.PRNGKey(0))
  keys = jax.random.split(jax.random.PRNGKey(1), seeds)
  states = jax.vmap(method.init_state)(keys)
  states = states.replace(step=state1.step)  # shared, unbatched step counter
  ax = _axes(state1)
  f1 = jax.jit(run)
  fs = jax.jit(jax.vmap(run, in_axes=(ax,), out_axes=ax))
  out = []
  for name, fn, st, n in (("1 seed", f1, state1, 1), (f"{seeds} seeds vmapped", fs, states, seeds)):
    t0 = time.perf_counter()
    compiled = fn.lower(st).compile()
    t_compile = time.perf_counter() - t0
    t = median_time(compiled, st, warmup=warmup, reps=reps)
    out.append((name, n, t_compile, t))
  print(
    f"\n{label}: buffer {cfg.prox.buffer_size}, batch {cfg.batch_size}, {sps} steps/stage, "
    f"MLP {cfg.sampler.depth} x {cfg.sampler.hidden}"
  )
  header = (
    f"{'run':<18} {'compile s':>9} {'stage s':>9} {'steps/s':>9} {'seed-steps/s':>12} {'ratio':>6}"
  )
  print(header)
  print("-" * len(header))
  base = sps / out[0][3]
  for name, n, tc, t in out:
    rate = sps / t
    print(f"{name:<18} {tc:>9.2f} {t:>9.3f} {rate:>9.1f} {n * rate:>12.1f} {n * rate / base:>6.2f}")


NAMES = ("seeds", "warmup", "reps", "quick")


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
  """Defines this tool's flags in ``fv`` (called only when the file is the program)."""
  flags.DEFINE_integer("seeds", 4, "S, seeds vmapped in one call.", lower_bound=1, flag_values=fv)
  flags.DEFINE_integer(
    "warmup", 1, "Warm-up calls per stage before timing.", lower_bound=0, flag_values=fv
  )
  flags.DEFINE_integer(
    "reps", 5, "Timed calls per stage (median reported).", lower_bound=1, flag_values=fv
  )
  flags.DEFINE_bool("quick", False, "Small buffers and networks, 3 reps.", flag_values=fv)


def main(argv, fv: flags.FlagValues = flags.FLAGS):
  _cli.no_arguments(argv)
  args = types.SimpleNamespace(**_cli.values(fv, NAMES))
  if args.quick:
    args.reps, args.warmup = 3, 1
  print(
    f"backend={jax.default_backend()} device={jax.devices()[0].device_kind} "
    f"seeds={args.seeds} reps={args.reps} (median of whole-stage calls)"
  )
  for label, cfg in _configs(args.quick):
    _bench(label, cfg, args.seeds, args.warmup, args.reps)


if __name__ == "__main__":
  define_flags()
  _cli.run(main)
