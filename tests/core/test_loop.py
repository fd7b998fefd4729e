"""core.loop.scan_in_chunks against one lax.scan over all steps (the oracle), its masking of the
padded last chunk, the non-finite stop and a prompt Ctrl-C."""

import os
import signal
import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.core import loop


def _step(w, k):
  g = 2.0 * (w - 3.0) + 0.1 * jax.random.normal(k, w.shape)
  w = w - 0.05 * g
  return w, jnp.sum((w - 3.0) ** 2)


@pytest.mark.parametrize("chunk", [1, 7, 50, 64])
def test_chunks_equal_one_scan(chunk):
  keys = jax.random.split(jax.random.key(0), 50)
  w0 = jnp.zeros((3,), jnp.float32)
  want_w, want_l = jax.jit(lambda c, k: jax.lax.scan(_step, c, k))(w0, keys)
  seen = []
  w, losses = loop.scan_in_chunks(
    _step, w0, keys, chunk=chunk, on_chunk=lambda n, l: seen.append((n, len(l)))
  )
  np.testing.assert_array_equal(np.asarray(w), np.asarray(want_w))  # padded steps left it alone
  np.testing.assert_array_equal(losses, np.asarray(want_l))
  assert seen[-1] == (50, 50) and all(n == m for n, m in seen)


def test_non_finite_loss_names_the_step():
  def step(c, x):
    c = c + 1.0
    return c, jnp.where(c >= 13, jnp.nan, c)

  with pytest.raises(loop.NonFiniteLossError, match=r"my fit: the loss is nan at step 13 of 40"):
    loop.scan_in_chunks(step, jnp.float32(0.0), jnp.arange(40), chunk=10, name="my fit")
  with pytest.raises(ValueError, match="chunk"):
    loop.scan_in_chunks(step, jnp.float32(0.0), jnp.arange(4), chunk=0)


def test_ctrl_c_lands_between_chunks():
  """A fit of many slow chunks: SIGINT after 1 s stops it within ~one chunk, not at the end."""

  def step(c, x):
    m = c + jnp.eye(256) * x
    for _ in range(20):
      m = jnp.tanh(m @ m * 1e-3)
    return c + 1e-6 * m, jnp.sum(m)

  c0 = jnp.zeros((256, 256), jnp.float32)
  t0 = time.time()
  timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
  timer.start()
  try:
    with pytest.raises(KeyboardInterrupt):
      loop.scan_in_chunks(step, c0, jnp.arange(100_000, dtype=jnp.float32), chunk=5)
  finally:
    timer.cancel()
  assert time.time() - t0 < 30  # the whole scan would take far longer


def test_no_steps_is_named():
  with pytest.raises(ValueError, match="no steps"):
    loop.scan_in_chunks(_step, jnp.zeros((3,)), jnp.zeros((0, 2)), name="empty fit")
