"""Agent-level checks of ``QAMAgent`` (QAM, Li & Levine, ICLR 2026,
github.com/ColinQiyangLi/qam): one jitted update per agent kind (QAM-F, QAM-E, BC flow, FQL) is
compiled once per module and shared by the tests; plain QAM's update is the common sub-graph of
QAM-F and QAM-E, and its sampler is checked separately.

Networks are tiny (one hidden layer of 16, K = 2, H = 2, N = 4) because only wiring is tested
here: which parameters each loss moves, the Polyak formula, which flow the sampler integrates.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from iclr26_jax.qam import config as config_lib
from iclr26_jax.qam import flows
from iclr26_jax.qam.agent import QAMAgent
from iclr26_jax.qam.networks import VelocityField

B, S, ACT, H = 8, 3, 2, 2
DA = H * ACT
TAU = 0.1
LR = 1e-2

# Plain QAM's update graph is a sub-graph of QAM-F's and QAM-E's (they add one loss each), so
# its update is exercised through them; its sampler is tested on its own below.
KINDS = {
  "qam_f": {"fql_alpha": 1.0},
  "qam_e": {"edit_scale": 0.1},
  "bc": {"agent_name": "bc"},
  "fql": {"agent_name": "fql", "fql_alpha": 1.0},
}
_COMMON = {
  "critic/loss",
  "critic/q_mean",
  "critic/q_std",
  "critic/target_mean",
  "bc/fm_loss",
  "total_loss",
  "grad_norm",
}
_ACTOR = {"actor/am_loss", "actor/adj_max", "actor/adj_mean", "actor/adj_std"}
_ONE = {"one_step/loss", "one_step/q_loss", "one_step/distill_loss"}
_EDIT = {"edit/loss", "edit/q_loss", "edit/entropy", "edit/temp", "edit/temp_loss"}
EXPECTED_INFO = {
  "qam_f": _COMMON | _ACTOR | _ONE,
  "qam_e": _COMMON | _ACTOR | _EDIT,
  "bc": _COMMON,
  "fql": _COMMON | _ONE,
}
EXPECTED_PARAMS = {
  "qam_f": {"critic", "bc_flow", "actor_flow", "one_step"},
  "qam_e": {"critic", "bc_flow", "actor_flow", "edit_policy", "edit_log_temp"},
  "bc": {"critic", "bc_flow"},
  "fql": {"critic", "bc_flow", "one_step"},
}


def _config(**overrides):
  cfg = config_lib.agent_defaults()
  cfg.actor_hidden_dims = (16,)
  cfg.critic_hidden_dims = (16,)
  cfg.num_qs = 2
  cfg.horizon = H
  cfg.flow_steps = 4
  cfg.tau = TAU
  cfg.batch_size = B
  cfg.optim.learning_rate = LR
  cfg.optim.grad_clip = 0.0  # no shared clip norm, so per-group gradients are separable
  for k, v in overrides.items():
    setattr(cfg, k, v)
  return cfg


def _flat_normal(key, shape):
  return jax.random.normal(key, (int(np.prod(shape)),)).reshape(shape)


def _batch(valid=1.0):
  k = jax.random.PRNGKey(7)
  ks = jax.random.split(k, 4)
  return {
    "observations": _flat_normal(ks[0], (B, S)),
    "actions": jax.random.uniform(ks[1], (B * H * ACT,), minval=-0.9, maxval=0.9).reshape(
      B, H, ACT
    ),
    "rewards": -jnp.ones((B,)),
    "masks": jnp.ones((B,)),
    "valid": jnp.full((B,), valid),
    "next_observations": _flat_normal(ks[2], (B, S)),
  }


@functools.lru_cache(maxsize=None)
def _agent(kind, **extra):
  cfg = _config(**{**KINDS[kind], **extra})
  return QAMAgent.create(jax.random.PRNGKey(0), jnp.zeros((B, S)), jnp.zeros((B, ACT)), cfg)


@functools.lru_cache(maxsize=None)
def _updated(kind):
  """(agent, agent after one update, info, agent after two updates) for the standard batch."""
  ag = _agent(kind)
  ag1, info = ag.update(_batch())
  ag2, _ = ag1.update(_batch())
  return ag, ag1, jax.device_get(info), ag2


def _max_abs(tree):
  return max(float(jnp.max(jnp.abs(x))) for x in jax.tree_util.tree_leaves(tree))


def _tree_delta(a, b):
  return jax.tree_util.tree_map(lambda x, y: x - y, a, b)


@pytest.mark.parametrize("kind", list(KINDS))
def test_update_finite_namespaced(kind):
  ag, ag1, info, _ = _updated(kind)
  assert set(ag.state.params) == EXPECTED_PARAMS[kind]
  assert set(info) == EXPECTED_INFO[kind], sorted(info)
  for k, v in info.items():
    assert np.shape(v) == () and np.isfinite(v), (k, v)
    assert "/" in k or k in ("total_loss", "grad_norm"), k
  assert int(ag1.state.step) == 1
  assert info["grad_norm"] > 0
  # Every trainable group moved (each one's loss reaches it), and stays finite.
  for name in EXPECTED_PARAMS[kind]:
    delta = _max_abs(_tree_delta(ag1.state.params[name], ag.state.params[name]))
    assert 0 < delta < 10 * LR, (name, delta)
  # The summed loss is the sum of the per-module losses.
  parts = [
    info[k] for k in ("critic/loss", "bc/fm_loss", "actor/am_loss", "one_step/loss") if k in info
  ]
  if kind == "qam_e":
    parts += [info["edit/loss"], info["edit/temp_loss"]]
  np.testing.assert_allclose(info["total_loss"], sum(parts), rtol=1e-5)


def _adam_mu(agent):
  """The first-moment tree of Adam: after one step from zero it is exactly (1 − b1)·gradient."""
  return optax.tree_utils.tree_get(agent.state.opt_state, "mu")


@pytest.mark.parametrize("kind", ["qam_f", "qam_e", "fql"])
def test_gradient_isolation(kind):
  """Each loss reaches only its own parameters: L_Q → φ, L_BC → β, L_AM → θ,
  L_F → ω, L_E → ψ and log α_e.

  valid = 0 zeroes L_Q and L_BC exactly (both valid-weighted) and changes nothing else in the
  step (same key, same parameters), so from the same state:
  - the critic's and BC flow's gradients must be exactly 0 under valid = 0 (nothing from the
    policy losses leaks into φ or β) and non-zero under valid = 1;
  - every policy group's gradient must be bitwise equal under valid = 1 and valid = 0 (nothing
    from L_Q or L_BC leaks into θ, ω, ψ). The test config disables global-norm clipping, which
    would otherwise couple the groups through the shared norm; Adam's first moment after one
    step is exactly 0.1·gradient, so it is read from the optimiser state.
  """
  ag = _agent(kind)
  ag_on, info_on = ag.update(_batch(valid=1.0))
  ag_off, info_off = ag.update(_batch(valid=0.0))
  assert float(info_off["critic/loss"]) == 0.0 and float(info_off["bc/fm_loss"]) == 0.0
  mu_on, mu_off = _adam_mu(ag_on), _adam_mu(ag_off)
  for name in ("critic", "bc_flow"):
    assert _max_abs(mu_off[name]) == 0.0, name
    assert _max_abs(mu_on[name]) > 0.0, name
    assert _max_abs(_tree_delta(ag_off.state.params[name], ag.state.params[name])) == 0.0, name
  for name in EXPECTED_PARAMS[kind] - {"critic", "bc_flow"}:
    assert _max_abs(mu_on[name]) > 0.0, name
    jax.tree_util.tree_map(np.testing.assert_array_equal, mu_on[name], mu_off[name])


def test_polyak_targets_follow_formula():
  """φ̄ ← (1 − τ)·φ̄ + τ·φ and β̄ ← (1 − τ)·β̄ + τ·β after every step (τ = 0.1 here, so a swapped
  τ ↔ 1 − τ or an update from the old parameters is far outside the f32 tolerance)."""
  ag0, ag1, _, ag2 = _updated("qam_f")
  for prev, new in ((ag0, ag1), (ag1, ag2)):
    for tgt, src in (("target_critic", "critic"), ("target_bc_flow", "bc_flow")):
      want = jax.tree_util.tree_map(
        lambda t, p: (1 - TAU) * t + TAU * p, prev.state.extras[tgt], new.state.params[src]
      )
      got = new.state.extras[tgt]
      jax.tree_util.tree_map(
        lambda g, w: np.testing.assert_allclose(g, w, rtol=0, atol=1e-6), got, want
      )
      moved = _max_abs(_tree_delta(got, prev.state.extras[tgt]))
      assert moved > 1e-4, (tgt, moved)  # the formula is not trivially met by a frozen target
  # After two steps the target lags the online parameters.
  assert _max_abs(_tree_delta(ag2.state.extras["target_critic"], ag2.state.params["critic"])) > 1e-3


def _ode_sample(bc_params, obs, key, num_steps):
  net = VelocityField((16,), DA)
  v = lambda o, x, t: net.apply({"params": bc_params}, o, x, t)
  z = jax.random.normal(key, (obs.shape[0] * DA,)).reshape(obs.shape[0], DA)
  return jnp.clip(flows.euler_ode(v, obs, z, num_steps), -1.0, 1.0).reshape(-1, H, ACT)


def test_lambda_zero_and_bc_sample_the_behaviour_flow():
  """Agent "bc" and QAM at λ = 0 sample v_β: bitwise equal to the clipped Euler ODE of v_β with
  the same x_0 key; QAM at λ > 0 samples v_θ, which differs (fresh initialisation)."""
  obs = _batch()["observations"]
  key = jax.random.PRNGKey(11)
  ref = jax.jit(_ode_sample, static_argnums=3)
  for ag in (_agent("bc"), _agent("qam_f", fql_alpha=0.0, inv_temp=0.0)):
    got = ag.sample_actions(obs, key)
    want = ref(ag.state.params["bc_flow"], obs, key, ag.config.flow_steps)
    assert got.shape == (B, H, ACT)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
  qam = _agent("qam_f", fql_alpha=0.0)
  got = qam.sample_actions(obs, key)
  not_bc = ref(qam.state.params["bc_flow"], obs, key, qam.config.flow_steps)
  assert float(jnp.max(jnp.abs(got - not_bc))) > 1e-3
  fine = ref(qam.state.params["actor_flow"], obs, key, qam.config.flow_steps)
  np.testing.assert_allclose(np.asarray(got), np.asarray(fine), atol=1e-6)


def test_qam_e_samples_bounded_edit_and_tunes_temperature():
  """QAM-E: evaluation samples the edit, |â − a_flow| ≤ η with a non-zero edit; one Adam step
  moves log α_e against the sign of (entropy − target) (SAC temperature rule)."""
  ag, ag1, info, _ = _updated("qam_e")
  eta = ag.config.edit_scale
  obs = _batch()["observations"]
  key = jax.random.PRNGKey(5)
  got = ag.sample_actions(obs, key).reshape(B, DA)
  k_flow, _ = jax.random.split(key)
  a_flow = _ode_sample(ag.state.params["actor_flow"], obs, k_flow, ag.config.flow_steps)
  diff = np.abs(np.asarray(got) - np.asarray(a_flow).reshape(B, DA))
  assert diff.max() <= eta + 1e-6
  assert diff.max() > 1e-3  # the edit is applied at evaluation, not skipped
  target = ag.config.edit_target_entropy * DA
  step = float(ag1.state.params["edit_log_temp"] - ag.state.params["edit_log_temp"])
  assert step != 0.0 and np.sign(step) == -np.sign(info["edit/entropy"] - target)
  np.testing.assert_allclose(info["edit/temp"], ag.config.edit_init_temp, rtol=1e-6)


def test_config_rejects_qam_f_with_qam_e():
  with pytest.raises(ValueError, match="mutually exclusive"):
    config_lib.validate(_config(fql_alpha=1.0, edit_scale=0.1))
  with pytest.raises(ValueError, match="edit_scale"):
    config_lib.validate(_config(agent_name="fql", edit_scale=0.1))
