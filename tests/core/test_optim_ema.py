"""core.optim EMA: the plain update and torch_ema's warm-up decay min(d, (1 + n) / (10 + n))."""

import jax.numpy as jnp
import numpy as np

from iclr26_jax.core import optim


def _hand_sequence(init, values, decay, warmup):
  """The EMA written out by hand, update by update (torch_ema's loop)."""
  ema, out = float(init), []
  for n, v in enumerate(values, start=1):
    d = min(decay, (1.0 + n) / (10.0 + n)) if warmup else decay
    ema = d * ema + (1.0 - d) * v
    out.append(ema)
  return out


def test_warmup_decay_values():
  # n = 1: 2/11; n = 8: 9/18 = 0.5; large n: the plain decay.
  got = [float(optim.ema_warmup_decay(0.999, n)) for n in (1, 8, 100, 100_000)]
  np.testing.assert_allclose(got, [2 / 11, 0.5, 101 / 110, 0.999], rtol=1e-6)


def test_ema_update_matches_hand_sequence_with_and_without_warmup():
  values = [3.0, -1.0, 2.0, 0.5, 4.0, -2.0, 1.0]
  for warmup in (False, True):
    want = _hand_sequence(10.0, values, 0.9, warmup)
    ema = {"w": jnp.asarray(10.0)}
    got = []
    for n, v in enumerate(values, start=1):
      ema = optim.ema_update(ema, {"w": jnp.asarray(v)}, 0.9, count=n if warmup else None)
      got.append(float(ema["w"]))
    np.testing.assert_allclose(got, want, rtol=1e-6)
  # The warm-up forgets the initial value: after one update only 2/11 of it is left.
  first = optim.ema_update({"w": jnp.asarray(11.0)}, {"w": jnp.asarray(0.0)}, 0.999, count=1)
  np.testing.assert_allclose(float(first["w"]), 2.0, rtol=1e-6)
