"""The lmKAN layer's `impl="pallas"` path (kernels in interpret mode) against `impl="xla"`.

lmKAN (Pozdnyakov & Schwaller, ICLR 2026; github.com/schwallergroup/lmkan). `LMKANDense(impl="pallas")`
reaches `kernels_pallas.spline_lookup.ops.spline_lookup` (interpret mode on a CPU host, the layer's
`interpret=None` default); the same parameters through `impl="xla"` (the pure-jnp reference with the
closed-form backward) are the oracle. One jitted program per path computes the output, the table
gradient and the input gradient of a nonlinear loss, on an odd input width (7: padded with a zero input)
with leading dims (3, 13) — not block multiples — and inputs N(0, 3²), many outside the G = 6 grid.
Tolerance: 2e-4 of the largest reference value. On a CPU host the kernels are the TPU ones, whose
dots are three bf16 passes (`_dots.bf16x3_dot`: ≤ ~3·2^-16 of |a|·|b| per product, see
`kernel_portable.dot_mode`); with inputs N(0, 3²) on a G = 6 grid most samples extrapolate, where the
bilinear weights grow like δ² and cancel, so the error is relative to Σ|w|·|T| rather than |y|.
Measured (pallas vs xla, / (1 + max |xla|)): y 1.0e-5, dT 9.5e-5, dx 2.7e-5, affine y 5.6e-5 (the
xla path itself: 7.9e-7 on the affine check); a wrong corner, weight or cell gives O(1).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np

from iclr26_jax.lmkan.layer import LMKANDense, affine_table
from iclr26_jax.lmkan.grid import SigmaGrid


@functools.lru_cache(maxsize=None)
def _program(impl):
  m = LMKANDense(5, grid_size=6, impl=impl)

  @jax.jit
  def f(params, x):
    def loss(p, xx):
      y = m.apply(p, xx)
      return jnp.sum(jnp.sin(y)), y

    return jax.value_and_grad(loss, argnums=(0, 1), has_aux=True)(params, x)

  return f


def _run(impl, params, x):
  (_, y), (gp, gx) = _program(impl)(params, x)
  return y, gp["params"]["table"], gx


def _close(got, want, tol=2e-4):
  got, want = np.asarray(got), np.asarray(want)
  assert got.shape == want.shape
  err, scale = np.max(np.abs(got - want)), np.max(np.abs(want))
  assert err <= tol * (1.0 + scale), f"max error {err:.3g} vs scale {scale:.3g}"


def test_layer_pallas_interpret_matches_xla_forward_and_grads():
  rng = np.random.default_rng(0)
  x = jnp.asarray(rng.standard_normal((3, 13, 7)) * 3.0, jnp.float32)
  table = jnp.asarray(rng.standard_normal((4, 7, 7, 5)) * 0.3, jnp.float32)
  params = {"params": {"table": table}}
  y_p, dt_p, dx_p = _run("pallas", params, x)
  y_x, dt_x, dx_x = _run("xla", params, x)
  assert y_p.shape == (3, 13, 5) and dx_p.shape == x.shape and dt_p.shape == table.shape
  _close(y_p, y_x)
  _close(dt_p, dt_x)
  _close(dx_p, dx_x)
  # Through the layer's kernel path: affine tables make the layer the linear map x·Wᵀ + b, also
  # far outside the grid (same compiled program: only the parameter values change).
  w = rng.standard_normal((5, 7)).astype(np.float32)
  bias = rng.standard_normal(5).astype(np.float32)
  affine = {"params": {"table": affine_table(jnp.asarray(w), SigmaGrid(6), jnp.asarray(bias))}}
  y_aff, _, _ = _run("pallas", affine, x)
  _close(y_aff, np.asarray(x) @ w.T + bias)
