"""Hand-computed checks: pessimistic target, chunk returns/masks/valid, env dynamics, flow matching."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.qam import critic, datasets, flows
from iclr26_jax.qam.envs import pointmaze as pm


def test_pessimistic_target_by_hand():
  next_q = jnp.asarray([[-1.0, -4.0], [-3.0, -2.0]])  # K=2, B=2
  y = critic.pessimistic_target(
    next_q, jnp.asarray([-1.9, 0.0]), jnp.asarray([1.0, 0.0]), 0.9, 2, 0.5
  )
  # col 0: mean −2, std 1 → −2.5; y = −1.9 + 0.81·(−2.5); col 1: mask 0 → y = 0.
  np.testing.assert_allclose(y, [-1.9 + 0.81 * -2.5, 0.0], rtol=1e-6)
  loss = critic.td_loss(
    jnp.asarray([[0.0, 1.0], [2.0, 3.0]]), jnp.asarray([1.0, 1.0]), jnp.asarray([1.0, 0.0])
  )
  np.testing.assert_allclose(loss, (1.0 + 0 + 1.0 + 0) / 4, rtol=1e-6)


def test_critic_and_flow_shape_checks_name_the_argument():
  """chex-checked boundaries: a ValueError naming the argument, the shape needed and the one got."""
  next_q, ones = jnp.zeros((2, 3)), jnp.ones(3)
  with pytest.raises(ValueError, match=r"next_q must have shape \(K, B\); got \(3,\)"):
    critic.pessimistic_target(ones, ones, ones, 0.9, 2, 0.5)
  with pytest.raises(ValueError, match=r"masks must have shape \(3,\); got \(3, 1\)"):
    critic.pessimistic_target(next_q, ones, ones[:, None], 0.9, 2, 0.5)
  with pytest.raises(ValueError, match=r"q must be \(K, B\) with target and valid \(B,\)"):
    critic.td_loss(next_q, ones, jnp.ones(2))
  with pytest.raises(ValueError, match=r"x0 must have shape \(B, D\); got \(3,\)"):
    flows.euler_ode(lambda o, x, t: x, jnp.zeros((3, 2)), ones, 2)


def test_chunks_by_hand():
  # Two episodes of length 3; rewards r_t = −t, mask 0 at t = 4, terminals at 2 and 5.
  t = np.arange(6, dtype=np.float32)
  data = {
    "observations": t[:, None],
    "actions": np.stack([t, -t], 1),
    "rewards": -t,
    "masks": np.asarray([1, 1, 1, 1, 0, 1], np.float32),
    "terminals": np.asarray([0, 0, 1, 0, 0, 1], np.float32),
    "next_observations": (t + 1)[:, None],
  }
  c = datasets.chunks_at(data, jnp.asarray([0, 1, 3]), 2, 0.5)
  np.testing.assert_allclose(c["rewards"], [0 - 0.5, -1 - 1.0, -3 - 2.0])
  np.testing.assert_allclose(c["masks"], [1, 1, 0])
  np.testing.assert_allclose(c["valid"], [1, 1, 1])
  np.testing.assert_allclose(c["next_observations"][:, 0], [2, 3, 5])
  np.testing.assert_allclose(c["actions"][1], [[1, -1], [2, -2]])
  c = datasets.chunks_at(data, jnp.asarray([2, 1]), 3, 0.5)  # 2..4 and 1..3 cross t=2
  np.testing.assert_allclose(c["valid"], [0, 0])


def test_env_walls_gaps_goal():
  p = jnp.asarray([[-0.1, 0.0], [-0.1, 0.55], [0.95, 0.5], [0.6, 0.0]])
  a = jnp.asarray([[1.0, 0.0], [1.0, 0.0], [5.0, 0.0], [0.5, 0.0]])
  p2, r, m = pm.step(p, a)
  np.testing.assert_allclose(p2, [[-0.1, 0.0], [0.0, 0.55], [1.0, 0.5], [0.65, 0.0]], atol=1e-6)
  np.testing.assert_allclose(r, [-1, -1, -1, 0])
  np.testing.assert_allclose(m, [1, 1, 1, 0])


def test_generator_deterministic_multimodal_and_evaluate_idle_policy():
  d1, i1 = datasets.generate_pointmaze(3, 64)
  d2, i2 = datasets.generate_pointmaze(3, 64)
  for k in d1:
    np.testing.assert_array_equal(d1[k], d2[k])
  assert 0.2 < i1["gap"].mean() < 0.8
  # Wall crossings happen through both gaps (the data is multimodal).
  cross = (d1["observations"][:, 0] < 0) != (d1["next_observations"][:, 0] < 0)
  ys = d1["observations"][cross, 1]
  assert (ys > 0.3).any() and (ys < -0.3).any()
  d3, _ = datasets.generate_pointmaze(4, 64)
  assert not np.array_equal(d1["actions"], d3["actions"])
  res = pm.evaluate(lambda o, k: jnp.zeros((o.shape[0], 1, 2)), jax.random.PRNGKey(0), 100)
  assert float(res["success"]) == 0.0 and float(res["episode_length"]) == pm.HORIZON
  # Positions: an idle policy never moves; a policy pushing +x in chunks of 3 moves 0.1 per step
  # (hand-computed from the start state) until the wall at x = -WALL_HALF stops it.
  pos = np.asarray(res["positions"])
  assert pos.shape == (100, pm.HORIZON + 1, 2)
  np.testing.assert_array_equal(pos, np.broadcast_to(pos[:, :1], pos.shape))
  right = pm.evaluate(
    lambda o, k: jnp.ones((o.shape[0], 3, 2)) * jnp.asarray([1.0, 0.0]),
    jax.random.PRNGKey(0),
    4,
    horizon=10,
    chunk=3,
  )
  pr = np.asarray(right["positions"])
  assert pr.shape == (4, 11, 2)
  x0 = pr[:, 0, 0]
  steps = np.minimum(np.arange(11)[None], np.floor((-pm.WALL_HALF - x0) / pm.STEP + 1e-6)[:, None])
  np.testing.assert_allclose(pr[:, :, 0], x0[:, None] + pm.STEP * steps, atol=1e-5)
  np.testing.assert_array_equal(pr[:, :, 1], np.broadcast_to(pr[:, :1, 1], (4, 11)))


def test_flow_matching_zero_for_analytic_velocity():
  """A Dirac target N(m, 0) has the exact velocity a − x_0 along every path, so Eq. 2 is 0;
  a velocity for the wrong mean gives a loss of ‖Δm‖²/D > 0."""
  m = jnp.asarray([[0.3, -0.2]] * 8)
  obs = jnp.zeros((8, 1))
  v = lambda o, x, t: flows.gaussian_velocity(x, t, m, 0.0)
  assert float(flows.flow_matching_loss(v, obs, m, jax.random.PRNGKey(0))) < 1e-8
  vw = lambda o, x, t: flows.gaussian_velocity(x, t, m + 0.1, 0.0)
  assert float(flows.flow_matching_loss(vw, obs, m, jax.random.PRNGKey(0))) > 1e-3
