"""Seed-vmapped offline training and evaluation on the point maze and OGBench.

``train_seeds`` trains S independent agents of one kind (QAM, QAM-F, QAM-E, FQL or BC) from the
same offline data in one compiled program: the agents are stacked along a leading seed axis and
every update is ``jax.vmap``-ed, so the three methods of a comparison cost three compiles whatever
the number of seeds. Evaluation is the point maze's vectorised JAX rollout by default, or
``ogbench_evaluator``: MuJoCo episodes on the host with the environment's own success metric, one
seed after another. The reproduce claims and ``colabs/qam.ipynb`` use it; the trainer-driven path
(``qam.method.QAMMethod`` through ``experiments.main``) runs the same agent update.
"""

from __future__ import annotations

import collections.abc
import time

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from iclr26_jax.qam import config as config_lib
from iclr26_jax.qam import datasets
from iclr26_jax.qam.agent import QAMAgent
from iclr26_jax.qam.envs import pointmaze as pm

Callable = collections.abc.Callable


def train_seeds(
  config: ml_collections.ConfigDict,
  data: dict,
  seeds,
  num_steps: int,
  batch_size: int,
  eval_every: int,
  eval_episodes: int = 100,
  eval_seed: int = 12345,
  verbose: bool = False,
  evaluator: Callable | None = None,
) -> dict:
  """Trains one agent per seed (vmapped) and evaluates the success rate along the way.

  Args:
    config: agent config (``qam.config.agent_defaults()`` fields).
    data: offline dataset (``qam.datasets`` layout) of the point maze.
    seeds: S integer seeds (network init and batch sampling).
    num_steps: updates per agent; must be a multiple of ``eval_every``.
    batch_size: chunks per update.
    eval_every: updates between evaluations (each evaluation runs ``eval_episodes`` vectorised
      episodes per seed with the same start states for every agent).
    eval_episodes, eval_seed: the point-maze evaluation (ignored with ``evaluator``).
    verbose: print the success after each evaluation.
    evaluator: ``stacked agents -> (success (S,), episode_length (S,))`` run after every
      ``eval_every`` updates instead of the point-maze rollout (e.g. ``ogbench_evaluator(env)``).
  Returns:
    dict with ``steps (E,)``, ``success (S, E)``, ``episode_length (S, E)``, ``info`` (the last
    update's diagnostics, each ``(S,)``), ``agents`` (the stacked final agents), ``compile_s``
    and ``seconds_per_update`` (steady state, all seeds together).
  """
  seeds = [int(s) for s in seeds]
  if not seeds:
    raise ValueError("seeds must be non-empty")
  if num_steps < 1 or eval_every < 1 or num_steps % eval_every:
    raise ValueError(
      f"num_steps ({num_steps}) must be a positive multiple of eval_every ({eval_every})"
    )
  h, gamma = int(config.horizon), float(config.discount)
  cfg = config_lib.with_fields(config, num_updates=int(num_steps))
  dev = {k: jnp.asarray(v) for k, v in data.items()}
  ex_obs, ex_act = dev["observations"][:2], dev["actions"][:2]
  keys = jnp.stack([jax.random.PRNGKey(s) for s in seeds])
  agents = jax.jit(jax.vmap(lambda k: QAMAgent.create(k, ex_obs, ex_act, cfg)))(keys)

  @jax.jit
  def run(agents, start):
    def body(ags, i):
      step_keys = jax.vmap(lambda k: jax.random.fold_in(jax.random.fold_in(k, 17), start + i))(keys)
      batch = jax.vmap(lambda k: datasets.sample_chunks(dev, k, batch_size, h, gamma))(step_keys)
      ags, info = jax.vmap(lambda a, b: a.update(b))(ags, batch)
      return ags, info

    agents, infos = jax.lax.scan(body, agents, jnp.arange(eval_every))
    return agents, jax.tree.map(lambda x: x[-1], infos)

  @jax.jit
  def evaluate(agents):
    key = jax.random.PRNGKey(eval_seed)
    out = jax.vmap(lambda a: pm.evaluate(a.sample_actions, key, eval_episodes, chunk=h))(agents)
    return out["success"], out["episode_length"]

  t0 = time.perf_counter()
  run_c = run.lower(agents, 0).compile()
  eval_c = evaluator or evaluate.lower(agents).compile()
  compile_s = time.perf_counter() - t0
  steps, succ, length = [], [], []
  run_s = 0.0
  info = {}
  for start in range(0, num_steps, eval_every):
    t0 = time.perf_counter()
    agents, info = run_c(agents, start)
    jax.block_until_ready(agents)
    run_s += time.perf_counter() - t0
    s, l = jax.device_get(eval_c(agents))
    steps.append(start + eval_every)
    succ.append(np.asarray(s))
    length.append(np.asarray(l))
    if verbose:
      print(
        f"  [{cfg.agent_name}] step {start + eval_every}: success "
        f"{np.mean(s):.3f} ± {np.std(s):.3f}",
        flush=True,
      )
  return {
    "steps": np.asarray(steps),
    "success": np.stack(succ, 1),
    "episode_length": np.stack(length, 1),
    "info": {k: np.asarray(v) for k, v in jax.device_get(info).items()},
    "agents": agents,
    "compile_s": compile_s,
    "seconds_per_update": run_s / num_steps,
  }


def rollouts(
  agent: QAMAgent, key: jax.Array, num_episodes: int = 16, horizon: int = pm.HORIZON
) -> np.ndarray:
  """Positions ``(E, horizon + 1, 2)`` of ``num_episodes`` evaluation episodes of one agent (for
  plots); an episode's position freezes once it reaches the goal."""
  run = jax.jit(
    lambda a, k: pm.evaluate(a.sample_actions, k, num_episodes, horizon, chunk=a.config.horizon)[
      "positions"
    ]
  )
  return np.asarray(run(agent, key))


def ogbench_evaluator(
  env, num_episodes: int, seed: int = 0, horizon: int | None = None, verbose: bool = False
) -> Callable:
  """An ``evaluator`` for ``train_seeds`` on an OGBench single-task environment.

  Each seed's agent runs ``num_episodes`` episodes (reset seeds ``seed, seed + 1, …``, the same
  for every agent and method) through ``ogbench_env.evaluate``: open-loop action chunks from
  ``sample_actions`` (one jitted call per chunk), success = the environment's ``info['success']``
  at some step, episodes ending at success (single-task OGBench environments terminate there) or
  at the time limit (``horizon`` or the environment's own, 500 steps for puzzle-3x3).
  Returns a function ``stacked agents -> (success (S,), mean episode length (S,))``.
  """
  from iclr26_jax.qam.envs import ogbench_env  # optional [rl] extra

  sample = jax.jit(lambda agent, obs, key: agent.sample_actions(obs[None], key)[0])

  def run(agents):
    n = jax.tree.leaves(agents)[0].shape[0]
    success, length = np.zeros(n), np.zeros(n)
    for i in range(n):
      agent = unstack(agents, i)
      t0 = time.perf_counter()
      out = ogbench_env.evaluate(
        env,
        lambda obs, key: np.asarray(sample(agent, jnp.asarray(obs), key)).reshape(-1),
        num_episodes,
        horizon=horizon,
        seed=seed,
        chunk=int(agent.config.horizon),
      )
      success[i], length[i] = out["success"], out["episode_length"]
      if verbose:
        print(
          f"    seed {i}: success {out['success']:.3f} over {num_episodes} episodes "
          f"({time.perf_counter() - t0:.0f} s)",
          flush=True,
        )
    return success, length

  return run


def unstack(agents, i: int):
  """Seed ``i`` of stacked agents."""
  return jax.tree.map(lambda x: x[i], agents)
