"""Kernels check themselves before they are trusted (kernels_pallas/_selfcheck.py).

On CPU the kernels run in interpret mode, which is checked only with
ICLR26_KERNEL_SELFCHECK_INTERPRET=1. A deliberately wrong kernel (monkeypatched: the real kernel's
output plus an offset, or a kernel that raises as a compile failure would) must be caught: the
public op returns the XLA reference's result with one KernelSelfCheckWarning naming the row; with
ICLR26_KERNEL_SELFCHECK=strict it raises; with =off the wrong result comes through (so the
wrong kernel is really wrong and the check is what catches it).
"""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kernels_pallas import _selfcheck
from kernels_pallas.bitplane_matmul import format as fmt
from kernels_pallas.bitplane_matmul import kernel_tpu
from kernels_pallas.bitplane_matmul import ops as bops
from kernels_pallas.bitplane_matmul import reference as bref
from kernels_pallas.spline_lookup import kernel_portable as kp
from kernels_pallas.spline_lookup import ops as sops
from kernels_pallas.spline_lookup import reference as sref
from kernels_pallas.spline_lookup.grid import SigmaGrid


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
  monkeypatch.setenv(_selfcheck.ENV_INTERPRET, "1")
  monkeypatch.delenv(_selfcheck.ENV, raising=False)
  monkeypatch.delenv(_selfcheck.ENV_CACHE, raising=False)
  _selfcheck.reset()
  jax.clear_caches()  # a wrapped kernel must be traced again
  yield
  _selfcheck.reset()
  jax.clear_caches()


def _spline_case():
  rng = np.random.default_rng(0)
  g = SigmaGrid(4)
  x = jnp.asarray(rng.standard_normal((16, 2, 2)), jnp.float32)
  table = jnp.asarray(rng.uniform(-0.1, 0.1, (2, 5, 5, 8)), jnp.float32)
  return x, table, g


def _spline(x, table, g):
  return sops.spline_lookup(x, table, g, impl="pallas", interpret=True, platform="tpu")


def _wrong_spline(monkeypatch):
  orig = kp.portable_forward
  monkeypatch.setattr(kp, "portable_forward", lambda *a, **k: orig(*a, **k) + 0.5)


def _selfcheck_warnings(record):
  return [w for w in record if issubclass(w.category, _selfcheck.KernelSelfCheckWarning)]


def test_correct_spline_kernel_passes_without_warning():
  x, table, g = _spline_case()
  with warnings.catch_warnings(record=True) as rec:
    warnings.simplefilter("always")
    y = _spline(x, table, g)
  assert not _selfcheck_warnings(rec)
  np.testing.assert_allclose(y, sref.spline_lookup_xla(x, table, g), rtol=1e-5, atol=1e-6)
  (verdict,) = _selfcheck.verdicts().values()
  assert verdict.ok, verdict


def test_wrong_spline_kernel_falls_back_with_one_warning(monkeypatch):
  x, table, g = _spline_case()
  _wrong_spline(monkeypatch)
  ref = sref.spline_lookup_xla(x, table, g)
  with warnings.catch_warnings(record=True) as rec:
    warnings.simplefilter("always")
    # The first use is traced (jit of grad): the check runs eagerly all the same.
    dx = jax.jit(jax.grad(lambda x: jnp.sum(_spline(x, table, g))))(x)
    y1 = _spline(x, table, g)  # the same variant again, eagerly and under jit: no new warning
    y2 = jax.jit(_spline, static_argnums=2)(x, table, g)
  got = _selfcheck_warnings(rec)
  assert len(got) == 1, [str(w.message) for w in got]
  assert "spline_lookup" in str(got[0].message) and "tpu portable G=4" in str(got[0].message)
  np.testing.assert_array_equal(y1, ref)
  np.testing.assert_array_equal(y2, jax.jit(sref.spline_lookup_xla, static_argnums=2)(x, table, g))
  dx_ref = jax.grad(lambda x: jnp.sum(sref.spline_lookup_xla(x, table, g)))(x)
  np.testing.assert_allclose(dx, dx_ref, rtol=1e-6, atol=1e-7)


def test_wrong_spline_kernel_is_wrong_when_check_is_off(monkeypatch):
  x, table, g = _spline_case()
  _wrong_spline(monkeypatch)
  monkeypatch.setenv(_selfcheck.ENV, "off")
  y = _spline(x, table, g)
  err = float(jnp.max(jnp.abs(y - sref.spline_lookup_xla(x, table, g))))
  assert err > 0.1  # the planted error comes through unchecked
  assert not _selfcheck.verdicts()


def test_wrong_spline_kernel_raises_when_strict(monkeypatch):
  x, table, g = _spline_case()
  _wrong_spline(monkeypatch)
  monkeypatch.setenv(_selfcheck.ENV, "strict")
  with pytest.raises(_selfcheck.KernelSelfCheckError, match="tpu portable G=4"):
    _spline(x, table, g)


def test_bad_mode_is_a_clear_error(monkeypatch):
  monkeypatch.setenv(_selfcheck.ENV, "maybe")
  x, table, g = _spline_case()
  with pytest.raises(ValueError, match="ICLR26_KERNEL_SELFCHECK"):
    _spline(x, table, g)


def _bitplane_case(m=4):
  planes, alpha, beta, _ = fmt.random_bitplane_layer(
    3, 256, 128, num_planes=3, precisions=(2, 3), group_size=128, dtype=jnp.float32
  )
  x = jnp.asarray(np.random.default_rng(4).standard_normal((m, 256)), jnp.float32)
  return x, planes, alpha, beta


def _bitplane(x, planes, alpha, beta, p):
  return bops.bitplane_matmul(
    x, planes, alpha, beta, p, impl="pallas", interpret=True, platform="tpu"
  )


def test_failing_bitplane_kernel_falls_back_with_one_warning(monkeypatch):
  """A kernel that raises (as one that fails to compile would) is caught the same way."""
  x, planes, alpha, beta = _bitplane_case()

  def broken(*a, **k):
    raise RuntimeError("Mosaic lowering failed (planted)")

  monkeypatch.setattr(kernel_tpu, "bitplane_matmul_tpu", broken)
  ref = bref.bitplane_matmul_reference(x, planes, alpha, beta, 3, precisions=(2, 3))
  with warnings.catch_warnings(record=True) as rec:
    warnings.simplefilter("always")
    y3 = _bitplane(x, planes, alpha, beta, 3)
    y2 = _bitplane(x, planes, alpha, beta, 2)  # precision is data: the same variant
  got = _selfcheck_warnings(rec)
  assert len(got) == 1 and "planted" in str(got[0].message), [str(w.message) for w in got]
  assert "bitplane_matmul" in str(got[0].message) and "tpu " in str(got[0].message)
  np.testing.assert_array_equal(y3, ref)
  np.testing.assert_array_equal(
    y2, bref.bitplane_matmul_reference(x, planes, alpha, beta, 2, precisions=(2, 3))
  )


def test_wrong_bitplane_kernel_falls_back_and_correct_one_passes(monkeypatch):
  x, planes, alpha, beta = _bitplane_case()
  ref = bref.bitplane_matmul_reference(x, planes, alpha, beta, 3, precisions=(2, 3))
  with warnings.catch_warnings(record=True) as rec:
    warnings.simplefilter("always")
    y_ok = _bitplane(x, planes, alpha, beta, 3)
  assert not _selfcheck_warnings(rec)
  np.testing.assert_allclose(y_ok, ref, rtol=1e-4, atol=1e-4)
  _selfcheck.reset()
  jax.clear_caches()
  orig = kernel_tpu.bitplane_matmul_tpu
  monkeypatch.setattr(kernel_tpu, "bitplane_matmul_tpu", lambda *a, **k: -orig(*a, **k))
  with warnings.catch_warnings(record=True) as rec:
    warnings.simplefilter("always")
    y = _bitplane(x, planes, alpha, beta, 3)
  assert len(_selfcheck_warnings(rec)) == 1
  np.testing.assert_array_equal(y, ref)


def test_disk_cache_keeps_verdicts_per_stack(monkeypatch, tmp_path):
  x, table, g = _spline_case()
  monkeypatch.setenv(_selfcheck.ENV_CACHE, str(tmp_path))
  _spline(x, table, g)
  (path,) = tmp_path.glob("selfcheck-*.json")
  assert f"jax{jax.__version__}" in path.name
  # A new process (simulated: verdicts forgotten) reads the passed verdict instead of checking:
  # the kernel now raises, and is still trusted because its verdict on this stack was "ok".
  _selfcheck.reset()
  jax.clear_caches()
  calls = []
  orig = sops._self_check
  monkeypatch.setattr(sops, "_self_check", lambda *a, **k: calls.append(1) or orig(*a, **k))
  _spline(x, table, g)
  assert not calls
  (verdict,) = _selfcheck.verdicts().values()
  assert verdict.ok and verdict.source == "disk"


def test_cross_lowering_is_not_checked(monkeypatch):
  """Compiled (non-interpret) TPU kernels traced on a CPU host cannot run here: no check."""
  if jax.default_backend() != "cpu":
    pytest.skip("CPU host only")
  x, table, g = _spline_case()
  _wrong_spline(monkeypatch)
  fn = jax.jit(lambda x, t: sops.spline_lookup(x, t, g, impl="pallas", interpret=False))
  fn.trace(x, table).lower(lowering_platforms=("tpu",))
  assert not _selfcheck.verdicts()
