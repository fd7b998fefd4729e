"""PDNS's training step is data parallel on a mesh.

The step draws its batch itself (the stage buffer and its rollout): ``shard_rows`` splits the
rollout's paths and the minibatch over ``data`` under the trainer's ``rows_mesh``. Oracle: the
same step on a 1-device mesh (where ``shard_rows`` is the identity). Needs 8 (fake) devices.
"""

import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.core import sharding as shd
from iclr26_jax.core import trainer
from iclr26_jax.pdns import method
from tests.conftest import need_devices

# Only the order of the float32 sums differs (the loss mean and each gradient summed in 8 partial
# sums, then an all-reduce; every row's network evaluation is the same): a few ulp of the
# gradient, far below one Adam step (lr 1e-3, about 1e-3 per parameter). Measured: 3e-8 (ising),
# 4e-9 (gmm2d) on the parameters after 2 steps.
ATOL = 1e-6
STEPS = 2  # step 0 starts a stage (rollout of the buffer, step size, weights) and an epoch


def _step(m, devices):
  """The trainer's jitted step over a ``data`` mesh of ``devices`` and its initial arguments."""
  mesh = shd.make_mesh({"data": len(devices)}, devices=devices)
  rep = shd.replicated(mesh)
  abstract = jax.eval_shape(m.init_state, jax.random.PRNGKey(0))
  state_sh = shd.state_shardings(abstract, mesh)
  state = jax.jit(m.init_state, out_shardings=state_sh)(jax.random.PRNGKey(0))
  fn = jax.jit(
    trainer.make_step_fn(m.update, mesh),
    in_shardings=(state_sh, None, rep),
    out_shardings=(state_sh, rep, rep),
  )
  return fn, state, jax.device_put(jnp.array(-1, jnp.int32), rep)


def _run(m, devices):
  fn, state, bad = _step(m, devices)
  compiled = fn.lower(state, {}, bad).compile()  # compiled once: its text and its runs
  for _ in range(STEPS):
    state, metrics, bad = compiled(state, {}, bad)
  return jax.device_get((state, metrics, bad)), compiled.as_text()


@pytest.mark.parametrize("target", ["ising", "gmm2d"])  # discrete and continuous sampler
def test_step_on_8_devices_is_data_parallel_and_equals_one_device(target):
  devices = need_devices(8)
  cfg = importlib.import_module(f"experiments.configs.pdns.{target}").get_config("smoke")
  m = method.PDNSMethod(cfg)
  (s1, m1, bad1), hlo1 = _run(m, devices[:1])
  (s8, m8, bad8), hlo8 = _run(m, devices)
  assert int(bad1) == int(bad8) == -1
  # The gradient all-reduce; the stage buffer rolled out on each device's paths is all-gathered.
  assert "all-reduce" in hlo8 and "all-gather" in hlo8
  assert "all-reduce" not in hlo1
  for a, b in zip(jax.tree.leaves(s1.params), jax.tree.leaves(s8.params)):
    np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=0, atol=ATOL)
  np.testing.assert_allclose(
    np.asarray(s8.extras["buf_x"]), np.asarray(s1.extras["buf_x"]), rtol=0, atol=ATOL
  )
  for k in m1:
    np.testing.assert_allclose(np.asarray(m8[k]), np.asarray(m1[k]), rtol=1e-5, atol=1e-6)
