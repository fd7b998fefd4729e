"""The online phase of offline-to-online QAM as a typed state and pure functions.

QAM (Li and Levine, "Q-learning with Adjoint Matching", ICLR 2026; reference code
github.com/ColinQiyangLi/qam). ``OnlineState`` holds what the phase carries from step to step
(position, pending action chunk, replay buffer, episode counters); it lives in
``TrainState.extras["online"]``, so it is checkpointed and a run killed inside the phase resumes
bitwise. ``init``, ``act``, ``record``, ``mix`` and ``info`` are pure (no environment, no agent):
``qam.method.QAMMethod`` queries the policy, steps the environment and passes the outcome to
``record``. The phase: docs/methods/qam.md ("Offline to online").

Shapes: S observation size, d action size, H chunk length, N buffer capacity (``online.steps``),
L episode step limit (OGBench only).
"""

from __future__ import annotations

import chex
import flax.struct
import jax
import jax.numpy as jnp

from iclr26_jax.qam import datasets

__all__ = ["OnlineState", "init", "info", "act", "record", "mix", "BUFFER_KEYS"]

BUFFER_KEYS = ("observations", "actions", "rewards", "masks", "terminals", "next_observations")


@flax.struct.dataclass
class OnlineState:
  """The online phase's carried state (a pytree; every field an array).

  Attributes:
    p: (S,) current observation.
    t: int32 step within the current episode.
    queue: (H, d) the action chunk being executed.
    q_pos: int32 position in ``queue`` of the next action (0: query the policy).
    count: int32 transitions in the buffer (= online steps taken).
    buffer: ``BUFFER_KEYS`` -> (N, ...) rows of the ``datasets`` layout.
    episodes: int32 finished episodes.
    successes: int32 finished episodes that reached the goal.
    ep_return: f32 return of the running episode.
    last_return: f32 return of the last finished episode.
    ep_actions: (L, d) actions of the running episode (OGBench: replayed into a fresh host
      environment on resume), or None.
    ep_success: bool, the environment's success seen in the running episode (OGBench), or None.
  """

  p: jax.Array
  t: jax.Array
  queue: jax.Array
  q_pos: jax.Array
  count: jax.Array
  buffer: dict
  episodes: jax.Array
  successes: jax.Array
  ep_return: jax.Array
  last_return: jax.Array
  ep_actions: jax.Array | None = None
  ep_success: jax.Array | None = None


def init(
  p0: jax.Array, capacity: int, horizon: int, action_dim: int, episode_limit: int | None = None
) -> OnlineState:
  """A fresh online state at observation ``p0`` (S,) with an empty buffer of ``capacity`` rows.

  ``episode_limit`` (L) given: the OGBench fields ``ep_actions`` (L, d) and ``ep_success``.
  """
  p0 = jnp.asarray(p0, jnp.float32)
  chex.assert_rank(
    p0,
    1,
    custom_message=f"p0 must be one observation (S,); got shape {p0.shape}",
    exception_type=ValueError,
  )
  if capacity < 1 or horizon < 1 or action_dim < 1:
    raise ValueError(
      f"capacity, horizon and action_dim must be >= 1; got {capacity}, {horizon}, {action_dim}"
    )
  s, d = p0.shape[0], action_dim
  buf = {
    "observations": jnp.zeros((capacity, s)),
    "actions": jnp.zeros((capacity, d)),
    "rewards": jnp.zeros((capacity,)),
    "masks": jnp.ones((capacity,)),
    "terminals": jnp.zeros((capacity,)),
    "next_observations": jnp.zeros((capacity, s)),
  }
  extra = {}
  if episode_limit is not None:
    extra = {
      "ep_actions": jnp.zeros((int(episode_limit), d), jnp.float32),
      "ep_success": jnp.bool_(False),
    }
  return OnlineState(
    p=p0,
    t=jnp.int32(0),
    queue=jnp.zeros((horizon, d)),
    q_pos=jnp.int32(0),
    count=jnp.int32(0),
    buffer=buf,
    episodes=jnp.int32(0),
    successes=jnp.int32(0),
    ep_return=jnp.float32(0.0),
    last_return=jnp.float32(0.0),
    **extra,
  )


def info(state: OnlineState) -> dict[str, jax.Array]:
  """The ``online/*`` metrics: buffer size, episodes, success rate, last episode's return."""
  eps = jnp.maximum(state.episodes, 1)
  return {
    "online/buffer_size": state.count.astype(jnp.float32),
    "online/episodes": state.episodes.astype(jnp.float32),
    "online/success_rate": state.successes / eps,
    "online/last_return": state.last_return,
  }


def act(state: OnlineState, sample_chunk) -> tuple[OnlineState, jax.Array]:
  """The next action: a new chunk from ``sample_chunk()`` -> (H, d) when the queue is spent,
  else the queued one. Returns the state with the queue in place (position unchanged) and the
  action (d,). OGBench: the action is recorded in ``ep_actions`` by ``record``."""
  queue = jax.lax.cond(state.q_pos == 0, sample_chunk, lambda: state.queue)
  return state.replace(queue=queue), queue[state.q_pos]


def record(
  state: OnlineState,
  a: jax.Array,
  r: jax.Array,
  m: jax.Array,
  success: jax.Array,
  done: jax.Array,
  p_next: jax.Array,
  p_start: jax.Array,
) -> OnlineState:
  """The state after the environment answered action ``a`` (d,) at ``state.p``.

  Args:
    state: the state ``act`` returned (queue in place; OGBench ``ep_actions[t]`` already ``a``).
    a: (d,) the action taken. r, m: reward and mask (0 at a terminal state).
    success: bool, the environment reports the goal reached. done: bool, the episode ended.
    p_next: (S,) the next observation; p_start: (S,) the next episode's first observation.
  Returns:
    the transition appended to the buffer, the counters advanced, and on ``done`` the episode
    reset to ``p_start``.
  """
  i = state.count
  p = state.p
  buf = dict(state.buffer)
  for name, val in zip(BUFFER_KEYS, (p, a, r, m, done.astype(jnp.float32), p_next)):
    buf[name] = buf[name].at[i].set(val)
  ep_return = state.ep_return + r
  ep_success = (state.ep_success if state.ep_success is not None else jnp.bool_(False)) | success
  horizon = state.queue.shape[0]
  out = state.replace(
    p=jnp.where(done, p_start, p_next),
    t=jnp.where(done, 0, state.t + 1),
    q_pos=jnp.where(done, 0, (state.q_pos + 1) % horizon),
    count=i + 1,
    buffer=buf,
    episodes=state.episodes + done.astype(jnp.int32),
    successes=state.successes + (done & ep_success).astype(jnp.int32),
    ep_return=jnp.where(done, 0.0, ep_return),
    last_return=jnp.where(done, ep_return, state.last_return),
  )
  if state.ep_actions is not None:
    out = out.replace(
      ep_actions=jnp.where(done, jnp.zeros_like(state.ep_actions), state.ep_actions),
      ep_success=ep_success & ~done,
    )
  return out


def mix(
  state: OnlineState, batch: dict, key: jax.Array, num_offline: int, horizon: int, discount: float
) -> dict:
  """``batch`` with each row replaced, with probability n_buf / (n_off + n_buf), by a uniformly
  drawn buffer chunk (n = the number of length-H chunks in each source).

  Args:
    state: the online state (its buffer and count).
    batch: the offline chunks (``datasets.sample_chunks`` layout, leading axis B).
    key: PRNG key of this step's mixing.
    num_offline: transitions in the offline dataset.
    horizon: H. discount: γ (the chunk's discounted reward sum).
  Returns:
    the mixed batch, same keys, shapes and dtypes.
  """
  k_pick, k_idx = jax.random.split(key)
  b = batch["rewards"].shape[0]
  n_buf = jnp.maximum(state.count - horizon + 1, 0)
  n_off = num_offline - horizon + 1
  share = n_buf / (n_off + n_buf)
  pick = jax.random.uniform(k_pick, (b,)) < share
  idx = jax.random.randint(k_idx, (b,), 0, jnp.maximum(n_buf, 1))
  online_chunks = datasets.chunks_at(state.buffer, idx, horizon, discount)
  out = {}
  for k, v in batch.items():
    sel = pick.reshape((b,) + (1,) * (v.ndim - 1))
    out[k] = jnp.where(sel, online_chunks[k].astype(v.dtype), v)
  return out
