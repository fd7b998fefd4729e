"""QAM hyperparameters (spec §11), one comment per field.

``default_config()`` holds the reference values for chunked manipulation; experiment configs
override a few fields (smaller networks for the point maze, per-domain ``inv_temp``).
"""

from __future__ import annotations

import ml_collections

from iclr26_jax.core import optim

AGENT_NAMES = ("qam", "bc", "fql")


def default_config() -> ml_collections.ConfigDict:
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
  c.batch_size = 256  # transitions (chunks) per update
  c.compute_dtype = (
    "float32"  # matmul policy: "float32" | "bfloat16" (bf16 operands, f32 params/accumulation)
  )
  c.optim = optim.optim_defaults()
  c.optim.name = "adam"
  c.optim.learning_rate = 3e-4  # Adam learning rate (one optimiser over all losses)
  c.optim.grad_clip = 1.0  # global-norm clip over the joint gradient
  c.num_updates = 1_000_000  # used for learning-rate schedules only
  return c


def with_fields(base: ml_collections.ConfigDict, **fields) -> ml_collections.ConfigDict:
  """An unlocked copy of the agent config ``base`` with ``fields`` replaced."""
  c = ml_collections.ConfigDict(base.to_dict())
  for k, v in fields.items():
    c[k] = v
  return c


def validate(config: ml_collections.ConfigDict) -> None:
  """Raises ``ValueError`` naming the field when a value is out of range."""
  if config.agent_name not in AGENT_NAMES:
    raise ValueError(f"config.agent_name must be one of {AGENT_NAMES}; got {config.agent_name!r}")
  if config.inv_temp < 0:
    raise ValueError(f"config.inv_temp must be >= 0; got {config.inv_temp}")
  if config.fql_alpha < 0:
    raise ValueError(f"config.fql_alpha must be >= 0; got {config.fql_alpha}")
  if config.edit_scale < 0:
    raise ValueError(f"config.edit_scale must be >= 0; got {config.edit_scale}")
  if config.edit_scale > 0 and config.agent_name != "qam":
    raise ValueError(
      f"config.edit_scale > 0 (QAM-E) needs agent_name 'qam'; got {config.agent_name!r}"
    )
  if config.edit_scale > 0 and config.fql_alpha > 0:
    raise ValueError(
      "QAM-F (config.fql_alpha > 0) and QAM-E (config.edit_scale > 0) are "
      f"mutually exclusive; got fql_alpha={config.fql_alpha}, "
      f"edit_scale={config.edit_scale}"
    )
  if config.edit_init_temp <= 0:
    raise ValueError(f"config.edit_init_temp must be > 0; got {config.edit_init_temp}")
  if config.compute_dtype not in ("float32", "bfloat16"):
    raise ValueError(
      f"config.compute_dtype must be 'float32' or 'bfloat16'; got {config.compute_dtype!r}"
    )
  if config.num_qs < 1:
    raise ValueError(f"config.num_qs must be >= 1; got {config.num_qs}")
  if config.horizon < 1:
    raise ValueError(f"config.horizon must be >= 1; got {config.horizon}")
  if config.flow_steps < 2:
    raise ValueError(
      f"config.flow_steps must be >= 2 (last step is an ODE step); got {config.flow_steps}"
    )
  if not 0 < config.tau <= 1:
    raise ValueError(f"config.tau must be in (0, 1]; got {config.tau}")
  if not 0 < config.discount <= 1:
    raise ValueError(f"config.discount must be in (0, 1]; got {config.discount}")
