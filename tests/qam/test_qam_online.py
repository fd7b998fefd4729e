"""qam.online: the online phase's typed state and pure functions, against hand-worked steps."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.qam import datasets
from iclr26_jax.qam import online

S, D, H, N = 3, 2, 2, 6


def _step(state, a, r, done, success=False, p_next=None, p_start=None):
  p_next = jnp.full((S,), 7.0) if p_next is None else p_next
  p_start = jnp.full((S,), -1.0) if p_start is None else p_start
  m = jnp.float32(0.0 if success else 1.0)
  return online.record(
    state,
    jnp.asarray(a, jnp.float32),
    jnp.float32(r),
    m,
    jnp.bool_(success),
    jnp.bool_(done),
    p_next,
    p_start,
  )


def test_init_shapes_and_errors():
  st = online.init(jnp.arange(S, dtype=jnp.float32), N, H, D)
  assert st.queue.shape == (H, D) and st.ep_actions is None and st.ep_success is None
  assert {k: v.shape for k, v in st.buffer.items()} == {
    "observations": (N, S),
    "actions": (N, D),
    "rewards": (N,),
    "masks": (N,),
    "terminals": (N,),
    "next_observations": (N, S),
  }
  og = online.init(jnp.zeros(S), N, H, D, episode_limit=4)
  assert og.ep_actions.shape == (4, D) and og.ep_success.dtype == jnp.bool_
  with pytest.raises(ValueError, match="one observation"):
    online.init(jnp.zeros((1, S)), N, H, D)
  with pytest.raises(ValueError, match=">= 1"):
    online.init(jnp.zeros(S), 0, H, D)


def test_act_queries_the_policy_only_at_chunk_starts():
  st = online.init(jnp.zeros(S), N, H, D)
  chunk = jnp.array([[1.0, 2.0], [3.0, 4.0]])
  st, a = online.act(st, lambda: chunk)
  np.testing.assert_array_equal(a, [1.0, 2.0])
  st = _step(st, a, 0.5, done=False)
  assert int(st.q_pos) == 1
  st, a = online.act(st, lambda: jnp.zeros((H, D)))  # mid-chunk: the queue, not the policy
  np.testing.assert_array_equal(a, [3.0, 4.0])


def test_record_appends_counts_and_resets_episodes():
  p0 = jnp.array([0.1, 0.2, 0.3])
  st = online.init(p0, N, H, D, episode_limit=4)
  st = st.replace(ep_actions=st.ep_actions.at[0].set(jnp.array([1.0, 1.0])))
  st = _step(st, [1.0, 1.0], 0.5, done=False, success=True)  # success seen mid-episode
  assert int(st.count) == 1 and int(st.t) == 1 and int(st.q_pos) == 1
  np.testing.assert_array_equal(st.buffer["observations"][0], p0)
  np.testing.assert_array_equal(st.buffer["next_observations"][0], np.full(S, 7.0))
  assert float(st.buffer["masks"][0]) == 0.0 and float(st.buffer["terminals"][0]) == 0.0
  assert bool(st.ep_success) and int(st.successes) == 0  # counted when the episode ends
  np.testing.assert_array_equal(st.p, np.full(S, 7.0))
  st = _step(st, [2.0, 2.0], 0.25, done=True)
  assert int(st.episodes) == 1 and int(st.successes) == 1
  assert float(st.last_return) == pytest.approx(0.75) and float(st.ep_return) == 0.0
  assert int(st.t) == 0 and int(st.q_pos) == 0 and float(st.buffer["terminals"][1]) == 1.0
  np.testing.assert_array_equal(st.p, np.full(S, -1.0))  # the next episode's start
  assert not np.asarray(st.ep_actions).any() and not bool(st.ep_success)
  assert online.info(st)["online/success_rate"] == 1.0


def test_mix_replaces_rows_with_the_buffers_share():
  n_off = 50
  data = {
    k: jnp.zeros((n_off,) + v)
    for k, v in (("observations", (S,)), ("actions", (D,)), ("next_observations", (S,)))
  }
  data.update(rewards=jnp.zeros(n_off), masks=jnp.ones(n_off), terminals=jnp.zeros(n_off))
  batch = datasets.sample_chunks(data, jax.random.PRNGKey(0), 4000, H, 0.9)
  st = online.init(jnp.zeros(S), N, H, D)
  # Empty buffer (count < H): no buffer chunk exists, nothing is replaced.
  same = online.mix(st, batch, jax.random.PRNGKey(1), n_off, H, 0.9)
  for k in batch:
    np.testing.assert_array_equal(same[k], batch[k])
  # A full buffer of reward-1 transitions: a row is a buffer chunk with probability
  # n_buf / (n_off + n_buf) = 5 / 54, and then its discounted reward sum is 1 + 0.9.
  st = st.replace(count=jnp.int32(N), buffer={**st.buffer, "rewards": jnp.ones(N)})
  mixed = online.mix(st, batch, jax.random.PRNGKey(1), n_off, H, 0.9)
  picked = np.asarray(mixed["rewards"]) > 0
  assert abs(picked.mean() - 5 / 54) < 0.02
  np.testing.assert_allclose(np.asarray(mixed["rewards"])[picked], 1.9, rtol=1e-6)
