import subprocess
import sys

import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

from iclr26_jax.core import sharding as shd
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
