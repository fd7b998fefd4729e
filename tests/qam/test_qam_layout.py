"""Loop layouts of the QAM update (QAM, Li & Levine, ICLR 2026,
github.com/ColinQiyangLi/qam): ``config.critic_loop`` ("vmap" | "scan") and ``config.am_forward``
("reuse" | "grid" | "scan") change how the update loops over critic members and flow steps, not
what it computes.

Oracle: the previous layout ("reuse", "vmap"), whose loss was itself tested bitwise against the
batched recomputation (test_qam_throughput.py). Same parameters, batch and key; the losses, the
diagnostics and every gradient leaf of the new layouts must agree with it to f32 summation
order. Tiny networks (one hidden layer of 32, K = 2, H = 2, N = 4, B = 64): the arithmetic per
point is the same at any size, only the order of the sums over members, steps and rows changes.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.core import config as core_config
from iclr26_jax.qam import config as config_lib
from iclr26_jax.qam.agent import QAMAgent

B, S, ACT, H, N, K = 64, 3, 2, 2, 4, 2
PREVIOUS = ("reuse", "vmap")
LAYOUTS = (("grid", "vmap"), ("scan", "scan"))
LOSS_KEYS = ("critic/loss", "bc/fm_loss", "actor/am_loss", "total_loss")
DIAG_KEYS = ("critic/q_mean", "critic/q_std", "critic/target_mean", "actor/adj_mean")

# Tolerances. f32 unit roundoff u = 2^-24 ≈ 6e-8. Reordering a sum of n terms moves it by at most
# (n − 1)·u·Σ|terms|. The losses are sums of non-negative terms (Σ|t| = the loss) over at most
# N·B = 256 points (L_AM: the per-step sums of the step scan against one N·B sum), so relative
# error ≤ 255·u ≈ 1.5e-5; the adjoints entering L_AM differ by the order of the K = 2 member sum
# in ∇_a Q̄ (one rounding, carried through N = 4 near-identity sweep steps). Bound used: 2e-5.
LOSS_RTOL = 2e-5
# Gradient entries are signed sums over B rows (critic, BC) or N·B points (v_θ) and over the K
# members' cotangent; with Σ|terms| a few times |max entry| at initialisation, (n − 1)·u·Σ|t| ≤
# ~1e-5·max|g| per leaf. A wrong member scale (1/K) or a dropped step is ≥ 25% off.
GRAD_ATOL = 1e-5


def _config(am_forward, critic_loop):
  cfg = config_lib.agent_defaults()
  cfg.actor_hidden_dims = (32,)
  cfg.critic_hidden_dims = (32,)
  cfg.num_qs = K
  cfg.horizon = H
  cfg.flow_steps = N
  cfg.inv_temp = 1.0
  cfg.am_forward = am_forward
  cfg.critic_loop = critic_loop
  return cfg


def _flat_normal(key, shape):
  return jax.random.normal(key, (int(np.prod(shape)),)).reshape(shape)


def _batch():
  ks = jax.random.split(jax.random.PRNGKey(7), 4)
  return {
    "observations": _flat_normal(ks[0], (B, S)),
    "actions": jax.random.uniform(ks[1], (B * H * ACT,), minval=-0.9, maxval=0.9).reshape(
      B, H, ACT
    ),
    "rewards": -jax.random.uniform(ks[2], (B,), minval=0.0, maxval=2.0),
    "masks": jnp.ones((B,)),
    "valid": (jnp.arange(B) % 7 != 0).astype(jnp.float32),  # some invalid chunks
    "next_observations": _flat_normal(ks[3], (B, S)),
  }


@functools.lru_cache(maxsize=None)
def _losses_and_grads(layout):
  ag = QAMAgent.create(
    jax.random.PRNGKey(11), jnp.zeros((1, S)), jnp.zeros((1, ACT)), _config(*layout)
  )
  fn = jax.jit(jax.grad(ag.total_loss, has_aux=True))
  grads, info = fn(ag.state.params, _batch(), jax.random.PRNGKey(5))
  return jax.device_get(grads), jax.device_get(info), jax.device_get(ag.state.params)


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda x: "-".join(x))
def test_layout_matches_previous_losses_and_grads(layout):
  g_old, i_old, p_old = _losses_and_grads(PREVIOUS)
  g_new, i_new, p_new = _losses_and_grads(layout)
  for a, b in zip(jax.tree.leaves(p_old), jax.tree.leaves(p_new)):
    np.testing.assert_array_equal(a, b)  # same initial parameters
  for k in LOSS_KEYS + DIAG_KEYS:
    np.testing.assert_allclose(float(i_new[k]), float(i_old[k]), rtol=LOSS_RTOL, err_msg=k)
  assert float(i_old["actor/am_loss"]) > 0 and float(i_old["critic/loss"]) > 0
  assert jax.tree.structure(g_new) == jax.tree.structure(g_old)
  for path, a in jax.tree_util.tree_leaves_with_path(g_old):
    b = np.asarray(functools.reduce(lambda t, k: t[k.key], path, g_new))
    scale = float(np.max(np.abs(a)))
    assert scale > 0, path  # every parameter group gets a gradient
    np.testing.assert_allclose(b, a, rtol=0, atol=GRAD_ATOL * scale, err_msg=str(path))


@pytest.mark.parametrize(
  "field,value", [("critic_loop", "loop"), ("am_forward", "batched"), ("flow_unroll", 0)]
)
def test_layout_fields_checked(field, value):
  cfg = _config(*PREVIOUS)
  cfg[field] = value
  with pytest.raises(core_config.ConfigError, match=field):
    config_lib.validate(cfg)


# -- "auto": resolved per backend by config.resolve_layout ----------------------------------


def test_resolve_layout_per_platform():
  base = config_lib.agent_defaults()
  assert (base.critic_loop, base.am_forward) == ("auto", "auto")  # the library default
  cpu = config_lib.resolve_layout(base, "cpu")
  assert (cpu.critic_loop, cpu.am_forward, cpu.flow_unroll) == ("scan", "scan", 1)
  for platform in ("gpu", "cuda", "rocm", "tpu", "TPU"):
    acc = config_lib.resolve_layout(base, platform)
    assert (acc.critic_loop, acc.am_forward) == ("vmap", "reuse"), platform
  assert (base.critic_loop, base.am_forward) == ("auto", "auto")  # the input is not changed
  # a field set by hand is kept on every platform
  hand = config_lib.with_fields(base, am_forward="grid")
  assert config_lib.resolve_layout(hand, "tpu").am_forward == "grid"
  assert config_lib.resolve_layout(hand, "tpu").critic_loop == "vmap"
  assert config_lib.resolve_layout(hand, "cpu").am_forward == "grid"
  # default platform: this process's backend
  assert (
    config_lib.resolve_layout(base).critic_loop
    == config_lib.resolve_layout(base, jax.default_backend()).critic_loop
  )
  with pytest.raises(ValueError, match="platform.*'metal'"):
    config_lib.resolve_layout(base, "metal")
  config_lib.validate(base)  # "auto" is a valid value


def test_auto_is_bitwise_scan_scan_on_cpu():
  """On CPU "auto" is the scan / scan layout: the same program, so the same bits."""
  assert jax.default_backend() == "cpu"
  g_s, i_s, _ = _losses_and_grads(("scan", "scan"))
  g_a, i_a, _ = _losses_and_grads(("auto", "auto"))
  assert set(i_a) == set(i_s)
  for k in i_s:
    np.testing.assert_array_equal(np.asarray(i_a[k]), np.asarray(i_s[k]), err_msg=k)
  for a, b in zip(jax.tree.leaves(g_s), jax.tree.leaves(g_a), strict=True):
    np.testing.assert_array_equal(a, b)


def test_agent_holds_resolved_layout_run_config_keeps_auto():
  cfg = _config("auto", "auto")
  ag = QAMAgent.create(jax.random.PRNGKey(0), jnp.zeros((1, S)), jnp.zeros((1, ACT)), cfg)
  assert (ag.config.critic_loop, ag.config.am_forward) == ("scan", "scan")
  gpu = QAMAgent.create(
    jax.random.PRNGKey(0), jnp.zeros((1, S)), jnp.zeros((1, ACT)), cfg, platform="gpu"
  )
  assert (gpu.config.critic_loop, gpu.config.am_forward) == ("vmap", "reuse")
  assert (cfg.critic_loop, cfg.am_forward) == ("auto", "auto")


def test_method_records_the_layout():
  """The run config keeps "auto" (what config.json stores and a resume compares), the agent and
  the logged metrics hold the resolved layout."""
  from experiments.configs.qam import pointmaze_qam
  from iclr26_jax.qam.method import QAMMethod

  c = pointmaze_qam.get_config("smoke")
  assert (c.agent.critic_loop, c.agent.am_forward) == ("auto", "auto")
  m = QAMMethod(c)
  assert m.layout == {"critic_loop": "scan", "am_forward": "scan"}
  assert (m.template.config.critic_loop, m.template.config.am_forward) == ("scan", "scan")
  assert m._layout_metrics == {"layout/critic_loop": 0.0, "layout/am_forward": 0.0}
  assert c.agent.critic_loop == "auto"
