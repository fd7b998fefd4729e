"""Known-answer tests of the MinPV schedules: the KMM initialisation, endpoint and monotonicity
constraints, clips, derivatives, fixed schedules and interpolants."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.minpv import paths

PROBES = np.array([0.1, 0.25, 0.5, 0.75, 0.9])


def _random_phi(seed, scale=0.5, k=5):
  rng = np.random.default_rng(seed)
  base = paths.kmm_init(k)
  return {
    n: jnp.asarray(np.asarray(v, np.float64) + scale * rng.standard_normal(k))
    for n, v in base.items()
  }


def test_kmm_reference_initialisation():
  w, a, b = paths.kmm_shapes(paths.kmm_init(5))
  # Effective shapes are softplus(log raw) = log(1 + raw), not raw.
  np.testing.assert_allclose(a, np.log1p([1.5, 2.0, 7.0, 9.0, 11.0]), rtol=1e-6)
  np.testing.assert_allclose(b, np.log1p([13.0, 11.0, 3.0, 2.5, 2.0]), rtol=1e-6)
  np.testing.assert_allclose(a, [0.916, 1.099, 2.079, 2.303, 2.485], atol=1e-3)
  np.testing.assert_allclose(b, [2.639, 2.485, 1.386, 1.253, 1.099], atol=1e-3)
  np.testing.assert_allclose(w, np.full(5, 0.2), rtol=1e-6)
  # Spec values are given to two decimals: |error| <= 0.005 + float32 rounding.
  alpha = paths.kmm(paths.kmm_init(5), jnp.asarray(PROBES)).alpha
  np.testing.assert_allclose(alpha, [0.90, 0.76, 0.52, 0.25, 0.09], atol=0.0051)


@pytest.mark.parametrize("phi", [paths.kmm_init(5), _random_phi(0), _random_phi(1, 1.0)])
@pytest.mark.parametrize("constraint", ["spherical", "affine"])
def test_kmm_endpoints_monotone_constraints(phi, constraint):
  # Exact endpoints: F is a CDF, so with no clip α(0) = 1 and α(1) = 0 for any φ.
  ends = paths.kmm(phi, jnp.array([0.0, 1.0]), constraint=constraint, eps=0.0)
  np.testing.assert_allclose(ends.alpha, [1.0, 0.0], atol=1e-6)
  np.testing.assert_allclose(ends.beta, [0.0, 1.0], atol=1e-3)
  t = jnp.linspace(0.0, 1.0, 4001)
  c = paths.kmm(phi, t, constraint=constraint)
  assert np.all(np.diff(np.asarray(c.alpha)) <= 1e-7)
  assert np.all(np.asarray(c.dalpha) <= 0.0)
  assert np.all(np.asarray(c.dbeta) >= 0.0)
  if constraint == "spherical":
    np.testing.assert_allclose(c.alpha**2 + c.beta**2, 1.0, atol=1e-5)
  else:
    np.testing.assert_allclose(c.alpha + c.beta, 1.0, atol=1e-6)


def test_kmm_clipped_endpoints_at_initialisation():
  c = paths.kmm(paths.kmm_init(5), jnp.array([0.0, 1.0]))
  assert float(c.alpha[0]) > 1 - 1e-3 and float(c.alpha[1]) < 1e-3


def test_kmm_weights_and_shape_clips():
  phi = {
    "logits": jnp.array([3.0, -2.0, 0.0]),
    "u": jnp.array([-50.0, 0.0, 50.0]),
    "q": jnp.array([50.0, -50.0, 1.0]),
  }
  w, a, b = paths.kmm_shapes(phi)
  np.testing.assert_allclose(float(jnp.sum(w)), 1.0, rtol=1e-6)
  assert float(a.min()) >= 0.1 and float(a.max()) <= 10.0
  assert float(b.min()) >= 0.1 and float(b.max()) <= 10.0
  np.testing.assert_allclose([a[0], a[2], b[0], b[1]], [0.1, 10.0, 10.0, 0.1], rtol=1e-6)


CASES = [(n, {}, "spherical") for n in paths.FIXED_PATHS] + [
  ("kmm", paths.kmm_init(5), "spherical"),
  ("kmm", paths.kmm_init(5), "affine"),
  ("kmm", _random_phi(2), "spherical"),
  ("kmm", _random_phi(3), "affine"),
]


@pytest.mark.parametrize("name,phi,constraint", CASES)
def test_derivatives_match_finite_differences_and_jvp(name, phi, constraint):
  with jax.enable_x64(True):
    phi = jax.tree.map(lambda v: jnp.asarray(v, jnp.float64), phi)
    fn = paths.get_path(name, constraint=constraint)
    t = jnp.linspace(0.01, 0.99, 41, dtype=jnp.float64)
    h = 1e-6
    c = fn(phi, t)
    up, dn = fn(phi, t + h), fn(phi, t - h)
    fd_a = (up.alpha - dn.alpha) / (2 * h)
    fd_b = (up.beta - dn.beta) / (2 * h)
    # Central differences in float64 are accurate to ~1e-8 relative here; the KMM spherical β̇
    # divides by β + ε instead of β, a relative change of ε/β ≤ 1e-4 on (0.01, 0.99).
    np.testing.assert_allclose(c.dalpha, fd_a, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(c.dbeta, fd_b, rtol=2e-4, atol=1e-6)
    _, jvp_a = jax.jvp(lambda tt: fn(phi, tt).alpha, (t,), (jnp.ones_like(t),))
    np.testing.assert_allclose(c.dalpha, jvp_a, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", paths.FIXED_PATHS)
def test_fixed_schedule_endpoints(name):
  c = paths.get_path(name, eps=0.0)({}, jnp.array([0.0, 1.0]))
  np.testing.assert_allclose([c.alpha[0], c.beta[0]], [1.0, 0.0], atol=1e-6)
  if name == "vp":  # VP never reaches α = 0: α(1) = exp(−(20 − 0.1)/4 − 0.05)
    np.testing.assert_allclose(c.alpha[1], np.exp(-19.9 / 4 - 0.05), rtol=1e-5)
  else:
    np.testing.assert_allclose([c.alpha[1], c.beta[1]], [0.0, 1.0], atol=1e-6)


def test_interpolants():
  rng = np.random.default_rng(0)
  x0, x1, z = (jnp.asarray(rng.standard_normal((4, 3)), jnp.float32) for _ in range(3))
  t = jnp.array([0.1, 0.4, 0.6, 0.9])
  c = paths.trig({}, t)
  np.testing.assert_allclose(
    paths.interpolate_plain(c, x0, x1),
    np.cos(np.pi * t / 2)[:, None] * x0 + np.sin(np.pi * t / 2)[:, None] * x1,
    rtol=1e-5,
    atol=1e-6,
  )
  v, dv = paths.bridge_variance(c, t, gamma=0.01, eps_b=0.005)
  np.testing.assert_allclose(v, 0.01 * t * (1 - t) + 0.005, rtol=1e-5)  # α² + β² = 1 on trig
  np.testing.assert_allclose(dv, 0.01 * (1 - 2 * t), rtol=1e-4, atol=1e-7)
  xb = paths.interpolate_bridge(c, t, x0, x1, z, gamma=0.01, eps_b=0.005)
  np.testing.assert_allclose(
    xb - paths.interpolate_plain(c, x0, x1), np.sqrt(v)[:, None] * z, rtol=1e-5, atol=1e-6
  )


def test_errors_name_the_argument():
  with pytest.raises(ValueError, match="path name"):
    paths.get_path("nope")
  with pytest.raises(ValueError, match="constraint"):
    paths.kmm(paths.kmm_init(3), 0.5, constraint="box")
  with pytest.raises(ValueError, match="num_components"):
    paths.kmm_init(0)
  with pytest.raises(ValueError, match="logits, u, q"):
    paths.kmm({"a": jnp.ones(3)}, 0.5)
  with pytest.raises(ValueError, match="x0 and x1"):
    paths.interpolate_plain(paths.trig({}, jnp.ones(2)), jnp.ones((2, 3)), jnp.ones((2, 4)))
