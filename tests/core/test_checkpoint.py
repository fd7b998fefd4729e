"""Checkpointer: reshard on restore, keep-N, fallback past a corrupt newest checkpoint, the
temporary folders it reports removed (only those gone from disk), and the errors of Orbax's
abandoned read coroutines kept off stderr."""

import glob
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding, PartitionSpec as P

from iclr26_jax.core import checkpoint as ckpt_lib
from iclr26_jax.core import sharding as shd
from iclr26_jax.core.checkpoint import Checkpointer, abstract_like
from tests.conftest import need_devices


def _tree(mesh, scale):
  x = jnp.arange(64.0).reshape(16, 4) * scale
  return {
    "w": jax.device_put(x, NamedSharding(mesh, P("data"))),
    "b": jax.device_put(jnp.ones(3) * scale, NamedSharding(mesh, P())),
    "step": jax.device_put(jnp.int32(scale), NamedSharding(mesh, P())),
  }


def _target(mesh):
  return {
    "w": jax.ShapeDtypeStruct((16, 4), jnp.float32, sharding=NamedSharding(mesh, P("data"))),
    "b": jax.ShapeDtypeStruct((3,), jnp.float32, sharding=NamedSharding(mesh, P())),
    "step": jax.ShapeDtypeStruct((), jnp.int32, sharding=NamedSharding(mesh, P())),
  }


def test_save_on_four_restore_on_two(tmp_path):
  devs = need_devices(4)
  mesh4 = shd.make_mesh({"data": 4}, devs)
  mesh2 = shd.make_mesh({"data": 2}, devs[:2])
  ck = Checkpointer(str(tmp_path), keep=2)
  ck.save(1, _tree(mesh4, 3))
  ck.wait()
  step, tree = ck.restore(_target(mesh2))
  assert step == 1
  assert tree["w"].sharding.mesh.shape == {"data": 2}
  assert len(tree["w"].addressable_shards) == 2
  np.testing.assert_array_equal(np.asarray(tree["w"]), np.arange(64.0).reshape(16, 4) * 3)
  ck.close()


def test_keep_n(tmp_path):
  mesh = shd.make_mesh({"data": 1})
  ck = Checkpointer(str(tmp_path), keep=2)
  for s in (1, 2, 3, 4):
    ck.save(s, _tree(mesh, s))
  ck.wait()
  assert ck.steps() == [3, 4]
  ck.close()


def test_corrupt_latest_falls_back_with_warning(tmp_path, capsys):
  mesh = shd.make_mesh({"data": 1})
  ck = Checkpointer(str(tmp_path), keep=3)
  for s in (1, 2):
    ck.save(s, _tree(mesh, s))
  ck.close()
  data_files = [
    f
    for f in glob.glob(str(tmp_path / "2" / "**" / "d" / "*"), recursive=True)
    if os.path.isfile(f)
  ]
  assert data_files
  for f in data_files:  # truncate every data file of the newest checkpoint
    with open(f, "r+b") as fh:
      fh.truncate(os.path.getsize(f) // 2)
  ck = Checkpointer(str(tmp_path), keep=3)
  step, tree = ck.restore(_target(mesh))
  assert step == 1
  np.testing.assert_array_equal(np.asarray(tree["b"]), np.ones(3))
  err = capsys.readouterr().err
  assert "step 2" in err and "Traceback" not in err
  assert ck.steps() == [1] and os.listdir(tmp_path / "corrupt")
  ck.save(2, _tree(mesh, 2))  # the run goes on and can save step 2 again
  ck.wait()
  assert ck.steps() == [1, 2]
  ck.close()


def test_restore_empty_returns_none(tmp_path):
  ck = Checkpointer(str(tmp_path / "none"))
  assert ck.restore({"a": jax.ShapeDtypeStruct((1,), jnp.float32)}) is None
  ck.close()


def test_keep_must_be_positive(tmp_path):
  with pytest.raises(ValueError, match="keep"):
    Checkpointer(str(tmp_path), keep=0)


def test_abstract_like_carries_shardings():
  mesh = shd.make_mesh({"data": 1})
  a = abstract_like({"x": jnp.zeros((2, 3))}, {"x": shd.replicated(mesh)})
  assert a["x"].shape == (2, 3) and a["x"].sharding == shd.replicated(mesh)


def test_errors_of_abandoned_orbax_coroutines_are_dropped_others_kept():
  # A failed read left Orbax's per-array read coroutines holding their errors; collected later,
  # each printed "Exception ignored in: <coroutine ...>" with a ~60-line TensorStore spec.
  import gc

  from iclr26_jax.core import checkpoint as ckpt_lib

  seen = []
  hook = ckpt_lib._drop_orbax_coroutine_errors(lambda u: seen.append(u.object.cr_code.co_filename))
  src = "async def read():\n  try:\n    await wake\n  finally:\n    raise RuntimeError('read')\n"
  previous = sys.unraisablehook
  sys.unraisablehook = hook
  try:
    for path in (os.path.join("site-packages", "orbax", "serialization.py"), "user_code.py"):
      env = {"wake": _Suspend()}
      exec(compile(src, path, "exec"), env)
      coro = env["read"]()
      coro.send(None)  # suspended inside the try
      del coro, env
      gc.collect()  # finalised: the finally raises -> unraisable
  finally:
    sys.unraisablehook = previous
  assert seen == ["user_code.py"]


class _Suspend:
  def __await__(self):
    yield


def test_remove_temporary_counts_only_folders_that_are_gone(tmp_path, monkeypatch):
  # A writer still running can refill a temporary folder after it is removed (two SIGINTs then
  # reported "removed 1 temporary folder" while it was still on disk): only folders that no
  # longer exist are reported.
  ck = ckpt_lib.Checkpointer(str(tmp_path), async_save=False)
  tmp = tmp_path / ("7" + ckpt_lib._TMP_MARK + "-123")
  os.makedirs(tmp / "default")
  monkeypatch.setattr(ckpt_lib.shutil, "rmtree", lambda path, ignore_errors=False: None)
  assert ck.remove_temporary() == [] and tmp.is_dir()
  monkeypatch.undo()
  assert ck.remove_temporary() == [str(tmp)] and not tmp.exists()
  ck.close()
