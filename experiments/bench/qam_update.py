r"""Benchmark: QAM update throughput, its time split, and the FQL / BC-flow updates in the same run.

QAM (Li & Levine, ICLR 2026, github.com/ColinQiyangLi/qam). For each of two configurations

  * full: the reference size (spec §11): actor and critic MLPs 4×512, K = 10 critics, chunk
    H = 5 of d = 5 actions (D_a = 25), N = 10 flow steps, batch 256, 40-D observations;
  * small: 2×64 MLPs, K = 2, H = 1, d = 2, N = 10, batch 256, 4-D observations,

it prints the compile time (lower + compile, separate from the timings), the steady-state wall
time per update, the process CPU-seconds per update (``time.process_time``: all threads of this
process, so it is comparable across machine loads where wall time is not) and updates/s of the
jitted update for QAM, FQL and the BC flow, with the ratio of each update time to the BC-flow
update (measured in the same run). The updates are timed as a training loop runs them: the
agent's buffers donated (``QAMAgent.update_donated``), each call consuming the previous call's
agent. The "full" configuration is the reference agent's shape (github.com/ColinQiyangLi/qam
with obs 40, 5-D actions, chunks of 5, batch 256, 4×512 networks, 10 critics, N = 10), so the
side-by-side figure of issue #20 can be rechecked by jitting the reference ``update`` on the
same random batches. ``--compute-dtype bfloat16`` times the bf16 matmul policy.

It then splits the QAM update into three separately jitted pieces, built from the agent's own
helpers and the library functions of ``critic.py`` / ``adjoint.py`` / ``flows.py``:

  * critic: gradient of the TD loss (Eq. 9) w.r.t. φ, including the ODE sample a' of v_θ at
    s_{t+H} and the target-ensemble forward;
  * rollout/adjoint: the memoryless SDE rollout, the terminal adjoint (∇Q of the target
    ensemble) and the lean-adjoint VJP sweep (spec §5 items 2–4);
  * loss: gradient of L_AM (Eq. 8, the batched v_θ forward/backward on N·B points) plus L_BC
    (Eq. 2), given the rollout and the adjoints (the full update reuses the rollout's v_θ
    forward on (N−1)·B of these points instead; the piece recomputes it, so the pieces
    overstate the update by that forward: ``removed GFLOP`` in the header);

and reports each as a fraction of the full update, plus the sum of the pieces (the full update
adds the Adam step and the Polyak updates, but compiled as one program it may also fuse and
schedule the pieces better, so the sum can exceed 1). All calls of one configuration are timed
in interleaved rounds (each round runs every call, repeated to ≥ 0.2 s), median and min
over the rounds.

Run from the repository root:
  python -m experiments.bench.qam_update --quick
  python -m experiments.bench.qam_update --quick --sizes full --agents qam --no-pieces
  python -m experiments.bench.qam_update --reps 5 --compute-dtype bfloat16
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import types

if __package__ in (None, ""):  # run as a file: make the repository root importable
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from absl import app, flags  # pylint: disable=g-import-not-at-top

from experiments import _cli  # pylint: disable=g-import-not-at-top
import jax  # pylint: disable=g-import-not-at-top
import jax.numpy as jnp
import numpy as np

from iclr26_jax.qam import adjoint, critic, flows
from iclr26_jax.qam import config as config_lib
from iclr26_jax.qam.agent import QAMAgent

# label -> (hidden width, depth, K, H, d, obs dim)
SIZES = {"full": (512, 4, 10, 5, 5, 40), "small": (64, 2, 2, 1, 2, 4)}
BATCH = 256
FQL_ALPHA = 10.0


def _config(size: str, agent_name: str, compute_dtype: str = "float32"):
  width, depth, k, h, _, _ = SIZES[size]
  cfg = config_lib.default_config()
  cfg.agent_name = agent_name
  cfg.compute_dtype = compute_dtype
  cfg.actor_hidden_dims = (width,) * depth
  cfg.critic_hidden_dims = (width,) * depth
  cfg.num_qs = k
  cfg.horizon = h
  cfg.batch_size = BATCH
  if agent_name == "fql":
    cfg.fql_alpha = FQL_ALPHA
  return cfg


def _batch(size: str):
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


def _agent(size: str, agent_name: str, compute_dtype: str = "float32") -> QAMAgent:
  _, _, _, _, d, s = SIZES[size]
  return QAMAgent.create(
    jax.random.PRNGKey(1),
    jnp.zeros((1, s)),
    jnp.zeros((1, d)),
    _config(size, agent_name, compute_dtype),
  )


def removed_forward_gflop(size: str) -> float:
  """GFLOP of the v_θ forward on (N−1)·B points that L_AM no longer recomputes (2 per MAC)."""
  width, depth, _, h, d, s = SIZES[size]
  dims = [s + h * d + 1] + [width] * depth + [h * d]
  macs = sum(a * b for a, b in zip(dims[:-1], dims[1:]))
  return 2.0 * macs * (config_lib.default_config().flow_steps - 1) * BATCH / 1e9


def _normal(key, shape):
  return jax.random.normal(key, (int(np.prod(shape)),)).reshape(shape)


# ---------------------------------------------------------------------- the QAM update in pieces
# pylint: disable=protected-access
def _critic_piece(ag: QAMAgent, batch, key):
  """∇_φ L_Q (Eq. 9) with the a' sample and the target-ensemble forward."""
  cfg, p, ex = ag.config, ag.state.params, ag.state.extras
  b = batch["observations"].shape[0]
  actions = batch["actions"].reshape(b, ag.chunk_dim)

  def loss(cp):
    a_next = ag._policy_chunks(p, ex, batch["next_observations"], key)
    next_q = ag._q_fn(ex["target_critic"])(batch["next_observations"], a_next)
    y = critic.pessimistic_target(
      next_q, batch["rewards"], batch["masks"], cfg.discount, cfg.horizon, cfg.rho
    )
    return critic.td_loss(ag._q_fn(cp)(batch["observations"], actions), y, batch["valid"])

  return jax.grad(loss)(p["critic"])


def _rollout_piece(ag: QAMAgent, batch, key):
  """Memoryless rollout, terminal adjoint and lean-adjoint sweep: (xs, adjs)."""
  cfg, p, ex = ag.config, ag.state.params, ag.state.extras
  obs = batch["observations"]
  b, n = obs.shape[0], cfg.flow_steps
  k_x0, k_eps = jax.random.split(key)
  v_base = ag._velocity(ex["target_bc_flow"])
  v_fine = ag._velocity(ex["target_bc_flow"], p["actor_flow"])
  x0 = _normal(k_x0, (b, ag.chunk_dim))
  eps = _normal(k_eps, (n - 1, b, ag.chunk_dim))
  xs = adjoint.rollout(v_fine, v_base, obs, x0, eps, n)
  adj_n = adjoint.terminal_adjoint(ag._q_fn(ex["target_critic"]), obs, xs[-1], cfg.inv_temp)
  return xs, adjoint.lean_adjoint(v_base, obs, xs, adj_n, n)


def _loss_piece(ag: QAMAgent, batch, xs, adjs, key):
  """∇ of L_AM (one batched v_θ forward on N·B points) + L_BC, given the rollout and adjoints."""
  cfg, ex = ag.config, ag.state.extras
  obs = batch["observations"]
  b, n = obs.shape[0], cfg.flow_steps
  actions = batch["actions"].reshape(b, ag.chunk_dim)
  v_base = ag._velocity(ex["target_bc_flow"])

  def loss(actor, bc):
    am = adjoint.grid_adjoint_matching_loss(
      ag._velocity(ex["target_bc_flow"], actor), v_base, obs, xs, adjs, n
    )
    fm = flows.flow_matching_loss(ag._velocity(bc), obs, actions, key, batch["valid"])
    return am + fm

  return jax.grad(loss, argnums=(0, 1))(ag.state.params["actor_flow"], ag.state.params["bc_flow"])


# pylint: enable=protected-access


def _compile(fn, *args, donate: bool = False):
  t0 = time.perf_counter()
  compiled = jax.jit(fn, donate_argnums=(0,) if donate else ()).lower(*args).compile()
  return compiled, time.perf_counter() - t0


def _interleaved_times(calls, warmup: int, reps: int, min_round_s: float = 0.2):
  """Per call (a zero-argument callable returning arrays): (median s, min s, median CPU-s).

  Every round times all calls back to back, so a change of machine load hits all of them alike
  (ratios stay fair); within a round a call is repeated until it has run ≥ ``min_round_s``
  (the repeat count is fixed from the last warm-up call). CPU-s is ``time.process_time`` (all
  threads of the process) per call.
  """
  inner = []
  for fn in calls:
    t = 0.0
    for _ in range(max(warmup, 1)):
      t0 = time.perf_counter()
      jax.block_until_ready(fn())
      t = time.perf_counter() - t0
    inner.append(max(1, int(min_round_s / max(t, 1e-6))))
  times = [[] for _ in calls]
  cpu = [[] for _ in calls]
  for _ in range(reps):
    for i, fn in enumerate(calls):
      c0, t0 = time.process_time(), time.perf_counter()
      for _ in range(inner[i]):
        out = fn()
      jax.block_until_ready(out)
      times[i].append((time.perf_counter() - t0) / inner[i])
      cpu[i].append((time.process_time() - c0) / inner[i])
  return [(statistics.median(t), min(t), statistics.median(c)) for t, c in zip(times, cpu)]


class _DonatedLoop:
  """``agent = update_donated(agent, batch)`` as a zero-argument call (a training loop)."""

  def __init__(self, compiled, agent, batch):
    self.compiled, self.agent, self.batch = compiled, agent, batch

  def __call__(self):
    self.agent, info = self.compiled(self.agent, self.batch)
    return info


def _bench_size(
  size: str, warmup: int, reps: int, agents, pieces: bool, compute_dtype: str
) -> list[str]:
  batch = _batch(size)
  names, calls, compile_s = [], [], []
  for name in agents:
    ag = _agent(size, name, compute_dtype)
    upd, t_c = _compile(lambda a, bb: a.update(bb), ag, batch, donate=True)
    names.append(f"{name} update")
    calls.append(_DonatedLoop(upd, ag, batch))
    compile_s.append(t_c)
  n_upd = len(names)
  if pieces:
    ag = _agent(size, "qam", compute_dtype)
    key = jax.random.PRNGKey(3)
    c_crit, tc_crit = _compile(_critic_piece, ag, batch, key)
    c_roll, tc_roll = _compile(_rollout_piece, ag, batch, key)
    xs, adjs = c_roll(ag, batch, key)
    c_loss, tc_loss = _compile(_loss_piece, ag, batch, xs, adjs, key)
    names += ["qam: critic (TD grad)", "qam: rollout + lean adjoint", "qam: loss (AM + BC grad)"]
    calls += [
      lambda: c_crit(ag, batch, key),
      lambda: c_roll(ag, batch, key),
      lambda: c_loss(ag, batch, xs, adjs, key),
    ]
    compile_s += [tc_crit, tc_roll, tc_loss]
  times = _interleaved_times(calls, warmup, reps)

  width, depth, k, h, d, s = SIZES[size]
  label = f"{size} ({depth}×{width}, K={k}, H·d={h}×{d}={h * d}, S={s}, B={BATCH}, {compute_dtype})"
  ref = names.index("bc update") if "bc update" in names else None
  qam = names.index("qam update") if "qam update" in names else None
  rows = []
  for i, (name, t_c, (t_med, t_min, c_med)) in enumerate(zip(names, compile_s, times)):
    j, ref_name = (ref, "BC") if i < n_upd else (qam, "QAM")
    if j is None:
      ratio_med = ratio_min = "–"
    else:
      ratio_med = f"{t_med / times[j][0]:.2f} × {ref_name}"
      ratio_min = f"{t_min / times[j][1]:.2f} × {ref_name}"
    rows.append(
      f"| {label} | {name} | {t_c:.1f} | {1e3 * t_med:.1f} | {1e3 * t_min:.1f} | "
      f"{c_med:.3f} | {1 / t_med:.2f} | {ratio_med} | {ratio_min} |"
    )
  if pieces and qam is not None:
    pieces_med = sum(t for t, _, _ in times[n_upd:])
    pieces_min = sum(t for _, t, _ in times[n_upd:])
    rows.append(
      f"| {label} | qam: sum of the 3 pieces | – | {1e3 * pieces_med:.1f} | "
      f"{1e3 * pieces_min:.1f} | – | – | {pieces_med / times[qam][0]:.2f} × QAM | "
      f"{pieces_min / times[qam][1]:.2f} × QAM |"
    )
  return rows


NAMES = ("sizes", "agents", "no-pieces", "compute-dtype", "warmup", "reps", "quick")


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
  """Defines this tool's flags in ``fv`` (called only when the file is the program)."""
  flags.DEFINE_string(
    "sizes",
    "small,full",
    f"Comma-separated subset of {sorted(SIZES)}.",
    flag_values=fv,
  )
  flags.DEFINE_string(
    "agents",
    "qam,fql,bc",
    "Comma-separated subset of qam,fql,bc (updates to time).",
    flag_values=fv,
  )
  flags.DEFINE_bool(
    "no-pieces", False, "Skip the three-piece split of the QAM update.", flag_values=fv
  )
  flags.DEFINE_enum(
    "compute-dtype",
    "float32",
    ["float32", "bfloat16"],
    "config.compute_dtype of every agent.",
    flag_values=fv,
  )
  flags.DEFINE_integer(
    "warmup", 1, "Warm-up calls per update before timing.", lower_bound=0, flag_values=fv
  )
  flags.DEFINE_integer(
    "reps", 5, "Timed interleaved rounds (median / min reported).", lower_bound=1, flag_values=fv
  )
  flags.DEFINE_bool("quick", False, "1 warm-up call and 3 timed rounds.", flag_values=fv)


def main(argv, fv: flags.FlagValues = flags.FLAGS):
  _cli.no_arguments(argv)
  opts = _cli.values(fv, NAMES)
  args = types.SimpleNamespace(**{k.replace("-", "_"): v for k, v in opts.items()})
  if args.quick:
    args.warmup, args.reps = 1, 3
  sizes = [x for x in args.sizes.split(",") if x]
  for x in sizes:
    if x not in SIZES:
      raise app.UsageError(f"--sizes: unknown size {x!r}; choose from {sorted(SIZES)}")
  agents = [x for x in args.agents.split(",") if x]
  for x in agents:
    if x not in ("qam", "fql", "bc"):
      raise app.UsageError(f"--agents: unknown agent {x!r}; choose from qam, fql, bc")
  load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
  print(
    f"backend={jax.default_backend()} device={jax.devices()[0].device_kind} "
    f"cpus={os.cpu_count()} load1={load:.1f} warmup={args.warmup} reps={args.reps} "
    "(per call: median / min over interleaved rounds; updates donated, as in training)"
  )
  for size in sizes:
    print(
      f"{size}: L_AM reuses the rollout's v_θ forward: {removed_forward_gflop(size):.3f} "
      "GFLOP per update not recomputed"
    )
  print()
  print(
    "| config | what | compile s | ms median | ms min | CPU-s/update (median) | "
    "calls/s (median) | ratio (medians) | ratio (mins) |"
  )
  print("|---|---|---|---|---|---|---|---|---|")
  for size in sizes:
    for row in _bench_size(
      size, args.warmup, args.reps, agents, not args.no_pieces, args.compute_dtype
    ):
      print(row, flush=True)


if __name__ == "__main__":
  define_flags()
  _cli.run(main)
