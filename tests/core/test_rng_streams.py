"""Named random streams (``core.train_state``): names fold in stably across processes, distinct
names give independent keys, and integer ids keep folding in as they did."""

import os
import subprocess
import sys

import jax
import numpy as np
import pytest

from iclr26_jax.core.train_state import TrainState, seed_key, stream_id, stream_key


def _state(step):
  return TrainState(step=np.int32(step), params={}, opt_state=(), rng=jax.random.PRNGKey(3))


def test_named_streams_are_distinct_and_deterministic():
  s = _state(5)
  keys = [np.asarray(s.step_key(n)) for n in ("online/act", "online/mix", "data", 7)]
  assert len({k.tobytes() for k in keys}) == 4
  np.testing.assert_array_equal(s.step_key("online/act"), _state(5).step_key("online/act"))
  assert not np.array_equal(s.step_key("online/act"), _state(6).step_key("online/act"))
  # integers fold in unchanged (the streams that existed before names keep their numbers)
  np.testing.assert_array_equal(
    s.step_key(1, 2), jax.random.fold_in(jax.random.fold_in(jax.random.fold_in(s.rng, 5), 1), 2)
  )
  np.testing.assert_array_equal(
    stream_key(s.rng, "a", "b"), stream_key(stream_key(s.rng, "a"), "b")
  )
  assert 0 <= stream_id("online/act") < 2**31
  with pytest.raises(ValueError, match="non-empty"):
    stream_id("")


def test_stream_ids_are_stable_across_processes():
  # Python's hash() of a str changes with PYTHONHASHSEED; a resumed run on another host must
  # draw the same numbers.
  code = (
    "from iclr26_jax.core.train_state import stream_id, seed_key; import numpy as np; "
    "print(stream_id('online/act'), np.asarray(seed_key(4, 'data')).tolist())"
  )
  outs = {
    subprocess.run(
      [sys.executable, "-c", code],
      capture_output=True,
      text=True,
      check=True,
      env={**os.environ, "PYTHONHASHSEED": str(h), "JAX_PLATFORMS": "cpu"},
    ).stdout
    for h in (1, 2)
  }
  assert outs == {f"{stream_id('online/act')} {np.asarray(seed_key(4, 'data')).tolist()}\n"}
