import subprocess
import sys
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

from iclr26_jax.core import sharding as shd
from iclr26_jax.core import trainer
from tests.conftest import need_devices, subprocess_env


def test_resolve_mesh_shape():
  assert shd.resolve_mesh_shape({"data": -1}, 8) == {"data": 8}
  assert shd.resolve_mesh_shape({"data": -1, "model": 2}, 8) == {"data": 4, "model": 2}
  assert shd.resolve_mesh_shape({"data": 2}, 8) == {"data": 2}
  for bad in ({"data": -1, "model": -1}, {"data": 16}, {"data": -1, "model": 3}, {"data": 0}):
    with pytest.raises(ValueError, match="mesh"):
      shd.resolve_mesh_shape(bad, 8)


def test_fsdp_spec():
  assert shd.fsdp_spec((64, 128), 8) == P(None, "data")
  assert shd.fsdp_spec((10,), 8) == P()  # small: replicated
  assert shd.fsdp_spec((1000, 3), 8, min_size=1) == P("data", None)
  assert shd.fsdp_spec((999, 3), 8, min_size=1) == P()


def test_global_batch_is_sharded_over_data():
  need_devices(8)
  mesh = shd.make_mesh()
  x = np.arange(32.0).reshape(16, 2)
  g = shd.global_batch({"x": x}, mesh)["x"]
  assert g.sharding.spec == P("data", None)
  assert len(g.addressable_shards) == 8
  np.testing.assert_array_equal(np.asarray(g), x)
  with pytest.raises(ValueError, match="divisible"):
    shd.global_batch({"x": np.zeros((12, 2))}, mesh)


def test_process_slice():
  assert shd.process_slice(8, 1, 2) == slice(4, 8)
  with pytest.raises(ValueError, match="divisible"):
    shd.process_slice(7, 0, 2)


def test_nothing_touches_devices_at_import():
  # Importing every module of the library and the entry points must not start a backend:
  # jax.distributed.initialize has to be callable afterwards.
  code = (
    "import importlib, pkgutil, iclr26_jax, kernels_pallas, experiments\n"
    "for pkg in (iclr26_jax, kernels_pallas, experiments):\n"
    "  for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
    "    if m.name.endswith(('main', 'reproduce')) or '.bench' in m.name: continue\n"
    "    importlib.import_module(m.name)\n"
    "from jax._src import xla_bridge\n"
    "assert not xla_bridge._backends, list(xla_bridge._backends)\n"
    "print('ok')\n"
  )
  out = subprocess.run(
    [sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env(), timeout=300
  )
  assert out.returncode == 0, out.stderr[-3000:]
  assert "ok" in out.stdout


def _constraints(fn, *args) -> int:
  """How many sharding constraints the jaxpr of ``fn(*args)`` holds (nested jaxprs included)."""
  return str(jax.make_jaxpr(fn)(*args)).count("sharding_constraint")


def test_shard_rows_is_the_identity_without_a_split():
  f = lambda x, s: shd.shard_rows((x, s))
  x, s = jnp.zeros((16, 2)), jnp.zeros(())
  one = shd.make_mesh({"data": 1}, devices=jax.devices()[:1])
  assert _constraints(f, x, s) == 0  # no rows_mesh
  for mesh in (None, one):
    with shd.rows_mesh(mesh):
      assert _constraints(f, x, s) == 0
      assert _constraints(shd.gather_rows, x) == 0
  need_devices(8)
  with shd.rows_mesh(shd.make_mesh()):
    assert _constraints(f, jnp.zeros((12, 2)), s) == 0  # 12 rows do not split over 8 devices
    assert _constraints(f, x, s) == 1  # the scalar stays as it is
    concrete = np.zeros((16, 2))
    assert shd.shard_rows(concrete) is concrete  # not traced: left alone
    assert (shd.rows_split(16), shd.rows_split(12)) == (8, 1)
  assert shd.rows_split(16) == 1


def test_shard_rows_splits_the_rows_and_keys_the_trace_caches():
  need_devices(8)
  mesh = shd.make_mesh()

  def branch(x):  # one function object: lax.cond caches its trace
    return shd.gather_rows(shd.shard_rows(x * 2.0).sum(-1))

  step = lambda x: jax.lax.cond(x[0, 0] > -1.0, branch, lambda v: v.sum(-1), x)
  x = jnp.ones((16, 2))
  assert _constraints(step, x) == 0
  with shd.rows_mesh(mesh):  # traced again under the mesh, not taken from the cache
    assert shd.current_rows_mesh() is mesh
    assert _constraints(step, x) == 2
    y = jax.jit(lambda v: shd.shard_rows(v * 2.0))(x)
  assert shd.current_rows_mesh() is None
  assert y.sharding.is_equivalent_to(shd.batch_sharding(mesh, 2), 2)
  np.testing.assert_array_equal(np.asarray(y), 2.0 * np.ones((16, 2)))


class _State(NamedTuple):
  step: jax.Array
  x: jax.Array


def test_make_step_fn_traces_update_under_the_mesh():
  need_devices(8)
  mesh = shd.make_mesh()
  seen = []

  def update(state, batch):
    seen.append(shd.current_rows_mesh())
    return state, {"loss": jnp.sum(shd.shard_rows(state.x))}

  state = _State(jnp.int32(0), jnp.ones((8,)))
  assert _constraints(trainer.make_step_fn(update, mesh), state, {}, jnp.int32(-1)) == 1
  assert _constraints(trainer.make_step_fn(update), state, {}, jnp.int32(-1)) == 0
  assert seen == [mesh, None]
