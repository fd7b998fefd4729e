r"""Benchmark: the QAM update's loop layout — CPU time, scratch memory and page faults per update.

QAM (Li & Levine, ICLR 2026, github.com/ColinQiyangLi/qam). For each size

  * small: 3×128 MLPs, K = 2 critics, chunks H = 5 of d = 5 actions (D_a = 25), 40-D
    observations, batch 256, N = 10 flow steps;
  * full: the paper's size, 4×512 MLPs, K = 10, otherwise the same

(the shapes of a side-by-side measurement against the authors' agent), it times
the jitted, donated ``QAMAgent.update`` (as a training loop runs it) in two loop layouts, in one
process, in alternating rounds:

  * chosen: the config defaults (``critic_loop``, ``am_forward``, ``flow_unroll``: see
    ``iclr26_jax/qam/config.py``);
  * previous: ``am_forward="reuse"``, ``critic_loop="vmap"``, ``flow_unroll=1``, the earlier layout
    (the rollout's v_θ forward reused by L_AM inside a scan, the vmapped ensemble
    differentiated as one program).

Per row: compile time; the compiled update's scratch (``memory_analysis().temp_size_in_bytes``)
of ``jax.jit(update)`` (what the chosen layout shrinks) and of the donated update that is timed;
CPU-ms per update (``time.process_time``: every thread of this process, so load from other jobs
moves it less than wall time); wall ms; minor page faults per update (``resource.getrusage``:
glibc maps an allocation above its 32 MiB mmap threshold fresh from the kernel on every call, so
a large scratch buffer costs one fault per 4 KiB page touched, every update); the speed-up of the
chosen layout over the previous one (ratio of CPU-ms medians, and of the per-round ratios); the
1-minute load average before and after the size's rounds.

Run as a program it measures one thread on one core, with the default allocator: unless
``XLA_FLAGS`` already sets ``intra_op_parallelism_threads``, it sets
``--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1`` before JAX starts, and pins
itself to the last CPU it may run on (``--nopin`` keeps the affinity; ``taskset -c 1 python -m
...`` chooses the core). ``MALLOC_*`` variables in the environment are printed (they change what
the fault column measures).

  python -m benchmarks.qam_update                       # both sizes, 5 rounds of ≥ 2 s
  python -m benchmarks.qam_update --quick --sizes small
  python -m benchmarks.qam_update --compute-dtype float32,bfloat16
  python -m benchmarks.qam_update --agents fql,bc       # also the FQL / BC-flow updates
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import types

if __name__ == "__main__":  # one thread unless told otherwise; must precede JAX's start
  if "intra_op_parallelism_threads" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
      os.environ.get("XLA_FLAGS", "")
      + " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    ).strip()
if __package__ in (None, ""):  # run as a file: make the repository root importable
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import resource  # pylint: disable=g-import-not-at-top

from absl import app, flags  # pylint: disable=g-import-not-at-top

from experiments import _cli  # pylint: disable=g-import-not-at-top
import jax  # pylint: disable=g-import-not-at-top
import jax.numpy as jnp

from iclr26_jax.qam import config as config_lib
from iclr26_jax.qam.agent import QAMAgent

# label -> (hidden width, depth, K, H, d, obs dim)
SIZES = {"small": (128, 3, 2, 5, 5, 40), "full": (512, 4, 10, 5, 5, 40)}
BATCH = 256
FQL_ALPHA = 10.0
# layout name -> config fields (the chosen layout is the config's defaults)
LAYOUTS = {
  "chosen": {},
  "previous": {"am_forward": "reuse", "critic_loop": "vmap", "flow_unroll": 1},
}


def config(size: str, agent_name: str = "qam", compute_dtype: str | None = None, **fields):
  """The agent config of a size (``fields`` override layout fields)."""
  width, depth, k, h, _, _ = SIZES[size]
  cfg = config_lib.agent_defaults()
  cfg.agent_name = agent_name
  if compute_dtype is not None:
    cfg.compute_dtype = compute_dtype
  cfg.actor_hidden_dims = (width,) * depth
  cfg.critic_hidden_dims = (width,) * depth
  cfg.num_qs = k
  cfg.horizon = h
  if agent_name == "fql":
    cfg.fql_alpha = FQL_ALPHA
  for key, value in fields.items():
    cfg[key] = value
  return cfg


def batch(size: str) -> dict:
  """A random batch of the size's shapes (B = 256)."""
  _, _, _, h, d, s = SIZES[size]
  ks = jax.random.split(jax.random.PRNGKey(0), 4)
  flat = lambda k, n: jax.random.normal(k, (n,))
  return {
    "observations": flat(ks[0], BATCH * s).reshape(BATCH, s),
    "actions": jnp.clip(0.5 * flat(ks[1], BATCH * h * d), -1, 1).reshape(BATCH, h, d),
    "rewards": -jnp.abs(flat(ks[2], BATCH)),
    "masks": jnp.ones((BATCH,)),
    "valid": jnp.ones((BATCH,)),
    "next_observations": flat(ks[3], BATCH * s).reshape(BATCH, s),
  }


def agent(size: str, agent_name: str = "qam", compute_dtype: str | None = None, **fields):
  _, _, _, _, d, s = SIZES[size]
  cfg = config(size, agent_name, compute_dtype, **fields)
  return QAMAgent.create(jax.random.PRNGKey(1), jnp.zeros((1, s)), jnp.zeros((1, d)), cfg)


def scratch_bytes(ag: QAMAgent, bt: dict, donate: bool = False) -> int:
  """``memory_analysis().temp_size_in_bytes`` of the compiled (optionally donated) update."""
  fn = jax.jit(QAMAgent._update, donate_argnums=(0,) if donate else ())  # pylint: disable=protected-access
  return int(fn.lower(ag, bt).compile().memory_analysis().temp_size_in_bytes)


class _DonatedLoop:
  """``agent = update_donated(agent, batch)`` as a zero-argument call (a training loop)."""

  def __init__(self, compiled, ag, bt):
    self.compiled, self.agent, self.batch = compiled, ag, bt

  def __call__(self):
    self.agent, info = self.compiled(self.agent, self.batch)
    return info


def _faults() -> int:
  return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def interleaved(calls, warmup: int, rounds: int, min_round_s: float):
  """Per call: lists of per-round (CPU s, wall s, minor faults) per update.

  Every round runs all calls back to back (so a change of machine load hits them alike); within
  a round a call repeats until it has used ≥ ``min_round_s`` CPU-seconds (count fixed from the
  warm-up).
  """
  inner = []
  for fn in calls:
    t = 1e-6
    for _ in range(max(warmup, 1)):
      c0 = time.process_time()
      jax.block_until_ready(fn())
      t = max(time.process_time() - c0, 1e-6)
    inner.append(max(1, round(min_round_s / t)))
  out = [{"cpu": [], "wall": [], "faults": []} for _ in calls]
  for _ in range(rounds):
    for i, fn in enumerate(calls):
      f0, c0, t0 = _faults(), time.process_time(), time.perf_counter()
      for _ in range(inner[i]):
        res = fn()
      jax.block_until_ready(res)
      n = inner[i]
      out[i]["wall"].append((time.perf_counter() - t0) / n)
      out[i]["cpu"].append((time.process_time() - c0) / n)
      out[i]["faults"].append((_faults() - f0) / n)
  return out


def bench_size(size: str, dtype: str | None, opts) -> list[dict]:
  """Rows of one size and compute dtype: the layouts, then any extra agents."""
  bt = batch(size)
  rows, calls = [], []
  specs = [(name, "qam", fields) for name, fields in LAYOUTS.items()]
  specs += [(f"{a} update", a, {}) for a in opts.agents]
  for name, agent_name, fields in specs:
    ag = agent(size, agent_name, dtype, **fields)
    row = {"size": size, "what": name, "dtype": ag.config.compute_dtype}
    t0 = time.perf_counter()
    donated = jax.jit(QAMAgent._update, donate_argnums=(0,)).lower(ag, bt).compile()  # pylint: disable=protected-access
    row["compile_s"] = time.perf_counter() - t0
    row["scratch_donated"] = int(donated.memory_analysis().temp_size_in_bytes)
    row["scratch_jit"] = scratch_bytes(ag, bt) if opts.scratch_jit else None
    rows.append(row)
    calls.append(_DonatedLoop(donated, ag, bt))
  load0 = os.getloadavg()[0]
  times = interleaved(calls, opts.warmup, opts.rounds, opts.min_round_s)
  load1 = os.getloadavg()[0]
  prev = times[list(LAYOUTS).index("previous")]
  for row, t in zip(rows, times):
    row["cpu_ms"] = 1e3 * statistics.median(t["cpu"])
    row["cpu_ms_min"] = 1e3 * min(t["cpu"])
    row["wall_ms"] = 1e3 * statistics.median(t["wall"])
    row["faults"] = statistics.median(t["faults"])
    row["speedup"] = statistics.median(prev["cpu"]) / statistics.median(t["cpu"])
    per_round = [p / c for p, c in zip(prev["cpu"], t["cpu"])]
    row["speedup_rounds"] = (min(per_round), max(per_round))
    row["load"] = (load0, load1)
  return rows


def _mib(x) -> str:
  return "–" if x is None else f"{x / 2**20:.1f}"


def format_row(r: dict) -> str:
  lo, hi = r["speedup_rounds"]
  return (
    f"| {r['size']} | {r['what']} | {r['dtype']} | {r['compile_s']:.1f} | "
    f"{_mib(r['scratch_jit'])} / {_mib(r['scratch_donated'])} | {r['cpu_ms']:.1f} | "
    f"{r['cpu_ms_min']:.1f} | {r['wall_ms']:.1f} | {r['faults']:.0f} | "
    f"{r['speedup']:.2f}× ({lo:.2f}–{hi:.2f}) | {r['load'][0]:.1f} → {r['load'][1]:.1f} |"
  )


HEADER = (
  "| size | layout | dtype | compile s | scratch MiB (jit / donated) | CPU-ms / update (median) | "
  "CPU-ms (min) | wall ms | minor faults / update | speed-up vs previous (medians; per-round "
  "range) | load1 before → after |\n|---|---|---|---|---|---|---|---|---|---|---|"
)

NAMES = (
  "sizes",
  "compute-dtype",
  "agents",
  "warmup",
  "rounds",
  "min-round-s",
  "quick",
  "pin",
  "scratch-jit",
)


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
  """Defines this tool's flags in ``fv`` (called only when the file is the program)."""
  flags.DEFINE_string(
    "sizes", "small,full", f"Comma-separated subset of {sorted(SIZES)}.", flag_values=fv
  )
  flags.DEFINE_string(
    "compute-dtype",
    "",
    "Comma-separated subset of float32,bfloat16 (empty: the config default).",
    flag_values=fv,
  )
  flags.DEFINE_string(
    "agents", "", "Extra updates to time beside the QAM layouts: subset of fql,bc.", flag_values=fv
  )
  flags.DEFINE_integer("warmup", 1, "Warm-up calls per update.", lower_bound=0, flag_values=fv)
  flags.DEFINE_integer(
    "rounds", 5, "Alternating timed rounds (median reported).", lower_bound=1, flag_values=fv
  )
  flags.DEFINE_float(
    "min-round-s", 2.0, "CPU-seconds of one call per round.", lower_bound=0.0, flag_values=fv
  )
  flags.DEFINE_bool("quick", False, "3 rounds of ≥ 0.5 s.", flag_values=fv)
  flags.DEFINE_bool("pin", True, "Pin the process to one CPU (the last allowed).", flag_values=fv)
  flags.DEFINE_bool(
    "scratch-jit",
    True,
    "Also compile the non-donated jax.jit(update) for its scratch (one more compile per row).",
    flag_values=fv,
  )


def main(argv, fv: flags.FlagValues = flags.FLAGS):
  _cli.no_arguments(argv)
  opts = _cli.values(fv, NAMES)
  opts = types.SimpleNamespace(**{k.replace("-", "_"): v for k, v in opts.items()})
  if opts.quick:
    opts.rounds, opts.min_round_s = 3, 0.5
  sizes = [x for x in opts.sizes.split(",") if x]
  for x in sizes:
    if x not in SIZES:
      raise app.UsageError(f"--sizes: unknown size {x!r}; choose from {sorted(SIZES)}")
  dtypes = [x for x in opts.compute_dtype.split(",") if x] or [None]
  for x in dtypes:
    if x not in (None, "float32", "bfloat16"):
      raise app.UsageError(f"--compute-dtype: unknown dtype {x!r}; choose float32 or bfloat16")
  opts.agents = [x for x in opts.agents.split(",") if x]
  for x in opts.agents:
    if x not in ("fql", "bc"):
      raise app.UsageError(f"--agents: unknown agent {x!r}; choose from fql, bc")
  if opts.pin and hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
  cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
  malloc = {k: v for k, v in os.environ.items() if k.startswith("MALLOC_")}
  chosen = {k: config_lib.agent_defaults()[k] for k in LAYOUTS["previous"]}
  print(
    f"backend={jax.default_backend()} cpus={cpus} XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r} "
    f"allocator={'default glibc' if not malloc else malloc} rounds={opts.rounds} "
    f"min_round_s={opts.min_round_s}\nchosen layout (config defaults): {chosen}; previous: "
    f"{LAYOUTS['previous']}; donated updates, alternating rounds\n"
  )
  print(HEADER)
  for size in sizes:
    for dtype in dtypes:
      for row in bench_size(size, dtype, opts):
        print(format_row(row), flush=True)


if __name__ == "__main__":
  define_flags()
  _cli.run(main)
