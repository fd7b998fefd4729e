"""DSB's training step is data parallel on a mesh.

The step draws its batch itself from the benchmark's samplers: ``shard_rows`` splits the drawn
rows (and CSBM's IMF rollout from them) over ``data`` under the trainer's ``rows_mesh``. Oracle:
the same step on a 1-device mesh (where ``shard_rows`` is the identity). Needs 8 (fake) devices.
"""

import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.core import sharding as shd
from iclr26_jax.core import trainer
from iclr26_jax.dsb import method
from tests.conftest import need_devices

# Only the order of the float32 sums differs (batch means and each gradient summed in 8 partial
# sums, then an all-reduce; every row's computation is the same): a few ulp of the gradient, far
# below one AdamW step (lr 1e-4 .. 1e-2 per parameter). Measured on the parameters after 2 steps:
# 3e-8 (csbm), 1.5e-8 (dlightsb_m).
ATOL = 1e-6
# CSBM smoke: epochs of 5 steps, 1 warm-up cycle, so step 9 trains the backward model on the
# independent coupling and step 10 the forward model on the IMF coupling (a rollout of the
# backward EMA model from the drawn rows).
START = {"csbm": 9, "dlightsb_m": 0}


def _run(m, devices, start):
  """``len(START)`` steps of the trainer's jitted step over a ``data`` mesh of ``devices``."""
  mesh = shd.make_mesh({"data": len(devices)}, devices=devices)
  rep = shd.replicated(mesh)
  abstract = jax.eval_shape(m.init_state, jax.random.PRNGKey(0))
  state_sh = shd.state_shardings(abstract, mesh)
  state = jax.jit(m.init_state, out_shardings=state_sh)(jax.random.PRNGKey(0))
  state = state.replace(step=jax.device_put(jnp.asarray(start, state.step.dtype), rep))
  bad = jax.device_put(jnp.array(-1, jnp.int32), rep)
  fn = jax.jit(
    trainer.make_step_fn(m.update, mesh),
    in_shardings=(state_sh, None, rep),
    out_shardings=(state_sh, rep, rep),
  )
  compiled = fn.lower(state, {}, bad).compile()  # compiled once: its text and its runs
  for _ in range(2):
    state, metrics, bad = compiled(state, {}, bad)
  return jax.device_get((state, metrics, bad)), compiled.as_text()


@pytest.mark.parametrize("solver", sorted(START))
def test_step_on_8_devices_is_data_parallel_and_equals_one_device(solver):
  devices = need_devices(8)
  cfg = importlib.import_module(f"experiments.configs.dsb.{solver}").get_config("smoke")
  m = method.DSBMethod(cfg)
  (s1, m1, bad1), hlo1 = _run(m, devices[:1], START[solver])
  (s8, m8, bad8), hlo8 = _run(m, devices, START[solver])
  assert int(bad1) == int(bad8) == -1
  assert "all-reduce" in hlo8 and "all-reduce" not in hlo1  # the gradient sum over the devices
  if solver == "csbm":
    assert float(m8["train/imf"]) == 1.0  # the last step ran the IMF rollout
  for a, b in zip(jax.tree.leaves((s1.params, s1.extras)), jax.tree.leaves((s8.params, s8.extras))):
    np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=0, atol=ATOL)
  for k in m1:
    np.testing.assert_allclose(np.asarray(m8[k]), np.asarray(m1[k]), rtol=1e-5, atol=1e-6)
