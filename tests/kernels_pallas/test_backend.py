import jax.numpy as jnp
import numpy as np
import pytest

from kernels_pallas import _backend as be


def test_resolve_impl():
  assert be.resolve_impl("auto", "cpu") == "xla"
  assert be.resolve_impl("auto", "gpu") == "pallas"
  assert be.resolve_impl("auto", "tpu") == "pallas"
  assert be.resolve_impl("xla", "tpu") == "xla"
  with pytest.raises(ValueError, match="impl"):
    be.resolve_impl("cuda")


def test_resolve_interpret():
  assert be.resolve_interpret(None, "cpu") is True
  assert be.resolve_interpret(None, "gpu") is False
  assert be.resolve_interpret(False, "cpu") is False


def test_round_up_and_pad_roundtrip():
  assert [be.round_up(n, 8) for n in (1, 8, 9)] == [8, 8, 16]
  with pytest.raises(ValueError):
    be.round_up(3, 0)
  x = jnp.arange(15.0).reshape(3, 5)
  p = be.pad_axes(x, (8, 128), value=-1)
  assert p.shape == (8, 128)
  np.testing.assert_array_equal(be.unpad(p, x.shape), x)
  assert float(p[3, 0]) == -1 and float(p[0, 5]) == -1
  assert be.pad_axes(x, (None, 5)) is x
  with pytest.raises(ValueError, match="rank"):
    be.pad_axes(x, (8,))
