"""QAM hyperparameters, one comment per field.

``agent_defaults()`` holds the reference values for chunked manipulation (those of Li & Levine,
"Q-learning with Adjoint Matching", ICLR 2026, and its official code); experiment configs
override a few fields (smaller networks for the point maze, per-domain ``inv_temp``). The table
of reference values and the loop layouts: docs/methods/qam.md ("The algorithm").
"""

from __future__ import annotations

import ml_collections

from iclr26_jax.core import optim

AGENT_NAMES = ("qam", "bc", "fql")
CRITIC_LOOPS = ("scan", "vmap")
AM_FORWARDS = ("scan", "grid", "reuse")
AUTO = "auto"
LAYOUT_FIELDS = ("critic_loop", "am_forward")
# What "auto" resolves to, per backend (``resolve_layout``): measured on CPU, the accelerator
# plan's compiled estimates on GPU and TPU (figures: docs/development/qam_notes.md).
LAYOUTS = {
  "cpu": {"critic_loop": "scan", "am_forward": "scan"},
  "gpu": {"critic_loop": "vmap", "am_forward": "reuse"},
  "tpu": {"critic_loop": "vmap", "am_forward": "reuse"},
}
_PLATFORM_ALIASES = {"cuda": "gpu", "rocm": "gpu", "gpu": "gpu", "cpu": "cpu", "tpu": "tpu"}


def agent_defaults() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.agent_name = "qam"  # "qam" (incl. QAM-F via fql_alpha) | "bc" (BC flow) | "fql"
  c.inv_temp = 0.3  # λ, inverse temperature of the tilt π_β·exp(λQ)
  c.fql_alpha = 0.0  # qam: >0 turns on QAM-F with this α_F; fql: distillation α
  c.edit_scale = 0.0  # qam: η > 0 turns on QAM-E (edit â = clip(a + η·e)); exclusive with QAM-F
  c.edit_target_entropy = -0.5  # QAM-E: target entropy per action dim (total −0.5·D_a)
  c.edit_init_temp = 1.0  # QAM-E: initial entropy temperature α_e (auto-tuned, log space)
  c.actor_hidden_dims = (512, 512, 512, 512)  # v_β, v_θ and one-step policy MLP widths
  c.critic_hidden_dims = (512, 512, 512, 512)  # each critic member's MLP widths
  c.num_qs = 10  # K, critic ensemble size
  c.rho = 0.5  # pessimism: target = mean − ρ·std over the ensemble
  c.discount = 0.99  # γ per environment step
  c.horizon = 5  # H, action chunk length (D_a = H·d)
  c.flow_steps = 10  # N, Euler steps of the ODE sampler and the SDE rollout
  c.tau = 0.005  # Polyak rate of the target critic and target BC flow
  c.residual = False  # v_θ parameterised as v_β̄ + v_θ
  # matmul policy: "float32" | "bfloat16" (bf16 operands, f32 params/accumulation)
  c.compute_dtype = "float32"
  # Loop layout of the update (same losses and gradients up to f32 summation order); "auto" is
  # resolved per backend when the agent is built (``resolve_layout``), the run's config keeps it.
  # critic_loop: "scan" loops over the K critic members for L_Q and the terminal adjoint, so one
  # member's activations are live; "vmap" differentiates the vmapped ensemble. No remat field:
  # XLA:CPU drops the barriers that keep a recomputation apart, so it saves no memory.
  c.critic_loop = "auto"
  # am_forward: L_AM's v_θ forward: "scan" one flow step at a time, "grid" one batched forward on
  # the N·B rollout points, "reuse" the rollout's own forward (keeps N steps of activations).
  c.am_forward = "auto"
  # flow_unroll: ``unroll`` of the flow-step scans; 1 (rolled): unrolling made no loop faster and
  # cost scratch memory and compile time.
  c.flow_unroll = 1
  c.optim = optim.optim_defaults()
  c.optim.name = "adam"
  c.optim.learning_rate = 3e-4  # Adam learning rate (one optimiser over all losses)
  c.optim.grad_clip = 1.0  # global-norm clip over the joint gradient
  # learning-rate schedule length of a standalone agent (no ``tx`` given to ``QAMAgent.create``);
  # a run (``qam.method``) drops it and uses ``num_steps``: one source of truth per run
  c.num_updates = 1_000_000
  return c


def with_fields(base: ml_collections.ConfigDict, **fields) -> ml_collections.ConfigDict:
  """An unlocked copy of the agent config ``base`` with ``fields`` replaced."""
  c = ml_collections.ConfigDict(base.to_dict())
  for k, v in fields.items():
    c[k] = v
  return c


def validate(config: ml_collections.ConfigDict, prefix: str = "") -> None:
  """Raises ``core.config.ConfigError`` (a ``ValueError``) naming the field when a value is out
  of range; ``prefix`` is the agent section's dotted path in a run config (``"agent."``)."""
  from iclr26_jax.core import config as config_lib

  def err(msg: str) -> config_lib.ConfigError:
    return config_lib.ConfigError(msg.format(p=prefix))

  if prefix:
    cfg = ml_collections.ConfigDict({prefix.rstrip("."): config})
  else:
    cfg = config
  keys = [prefix + k for k in ("actor_hidden_dims", "critic_hidden_dims", "num_qs", "horizon")]
  config_lib.positive(cfg, *keys)
  config_lib.nonneg(cfg, prefix + "inv_temp", prefix + "fql_alpha", prefix + "edit_scale")
  config_lib.check_range(cfg, prefix + "edit_init_temp", gt=0)
  config_lib.check_range(cfg, prefix + "flow_steps", ge=2)  # the last step is an ODE step
  config_lib.check_range(cfg, prefix + "tau", prefix + "discount", gt=0, le=1)
  if config.agent_name not in AGENT_NAMES:
    raise err(
      f"config key '{{p}}agent_name' must be one of {AGENT_NAMES}; got {config.agent_name!r}"
    )
  if config.edit_scale > 0 and config.agent_name != "qam":
    raise err(
      f"config key '{{p}}edit_scale' > 0 (QAM-E) needs agent_name 'qam'; got {config.agent_name!r}"
    )
  if config.edit_scale > 0 and config.fql_alpha > 0:
    raise err(
      "QAM-F ({p}fql_alpha > 0) and QAM-E ({p}edit_scale > 0) are "
      f"mutually exclusive; got fql_alpha={config.fql_alpha}, "
      f"edit_scale={config.edit_scale}"
    )
  for key, allowed in (("critic_loop", CRITIC_LOOPS), ("am_forward", AM_FORWARDS)):
    if config[key] not in allowed + (AUTO,):
      raise err(f"config key '{{p}}{key}' must be one of {allowed + (AUTO,)}; got {config[key]!r}")
  if not isinstance(config.flow_unroll, bool):  # True: fully unrolled (jax.lax.scan's unroll)
    config_lib.check_range(cfg, prefix + "flow_unroll", ge=1)
  if config.compute_dtype not in ("float32", "bfloat16"):
    raise err(
      f"config key '{{p}}compute_dtype' must be 'float32' or 'bfloat16'; got {config.compute_dtype!r}"
    )


def resolve_layout(agent_config: ml_collections.ConfigDict, platform: str | None = None):
  """The agent config with its ``"auto"`` loop-layout fields resolved for ``platform``.

  ``critic_loop`` and ``am_forward`` set to ``"auto"`` take the values of ``LAYOUTS[platform]``:
  (scan, scan) on CPU, where it was measured faster; (vmap, reuse) on GPU and TPU, which the
  accelerator plan's compiled estimates favour. Fields set to a value are kept.

  Args:
    agent_config: a ``agent_defaults()``-shaped ConfigDict (or FrozenConfigDict).
    platform: "cpu", "gpu" (also "cuda", "rocm") or "tpu"; default ``jax.default_backend()``.

  Returns:
    An unlocked ``ConfigDict`` copy (the input is not changed).

  Raises:
    ValueError: an unknown platform.

  Examples:
    >>> from iclr26_jax.qam import config
    >>> c = config.resolve_layout(config.agent_defaults(), "cpu")
    >>> c.critic_loop, c.am_forward
    ('scan', 'scan')
    >>> c = config.resolve_layout(config.agent_defaults(), "cuda")
    >>> c.critic_loop, c.am_forward
    ('vmap', 'reuse')
    >>> config.resolve_layout(config.with_fields(config.agent_defaults(), am_forward="grid"),
    ...                       "tpu").am_forward
    'grid'
  """
  if platform is None:
    import jax

    platform = jax.default_backend()
  kind = _PLATFORM_ALIASES.get(str(platform).lower())
  if kind is None:
    raise ValueError(f"platform must be one of {sorted(_PLATFORM_ALIASES)}; got {platform!r}")
  c = ml_collections.ConfigDict(agent_config.to_dict())
  for field in LAYOUT_FIELDS:
    if isinstance(c[field], str) and c[field] == AUTO:
      c[field] = LAYOUTS[kind][field]
  return c
