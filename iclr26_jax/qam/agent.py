"""The QAM agent: state pytree, ``create``, jitted ``update`` and ``sample_actions``.

``QAMAgent`` is QAM (critic TD, Eq. 9; behaviour flow, Eq. 2; fine-tuned flow by lean adjoint
matching, Eq. 8), QAM-F (``fql_alpha > 0``), QAM-E (``edit_scale > 0``), the BC-flow baseline
(``agent_name="bc"``) or FQL (``"fql"``), per ``config.agent_name``. All losses are summed and
take one clipped Adam step on the joint parameter tree; the target critic and target BC flow are
Polyak-averaged after it. The loop layout (``config.critic_loop`` / ``am_forward``) is resolved
in ``create``; a loop's gradient reaches ``jax.grad`` through ``_grad_in_forward``.

The algorithm, its variants and the loop layouts: docs/methods/qam.md ("The algorithm").
"""

from __future__ import annotations

from typing import Any

import chex
import flax.struct
import jax
import jax.numpy as jnp
import ml_collections
import optax

from iclr26_jax.core import optim
from iclr26_jax.core.train_state import TrainState
from iclr26_jax.qam import adjoint, baselines, critic, flows, variants
from iclr26_jax.qam import config as config_lib
from iclr26_jax.qam.networks import (
  CriticEnsemble,
  EditPolicy,
  OneStepPolicy,
  VelocityField,
  critic_member,
)


def _normal(key, shape):
  """Standard normal of any rank drawn flat (rank ≥ 3 threefry draws compile slowly on CPU)."""
  n = 1
  for s in shape:
    n *= s
  return jax.random.normal(key, (n,)).reshape(shape)


def _nets(config, action_dim: int):
  dt = config.compute_dtype
  vel = VelocityField(tuple(config.actor_hidden_dims), action_dim, compute_dtype=dt)
  crit = CriticEnsemble(tuple(config.critic_hidden_dims), config.num_qs, compute_dtype=dt)
  one = OneStepPolicy(tuple(config.actor_hidden_dims), action_dim, compute_dtype=dt)
  return vel, crit, one


def _edit_net(config, action_dim: int):
  return EditPolicy(tuple(config.actor_hidden_dims), action_dim, compute_dtype=config.compute_dtype)


def _grad_in_forward(value_aux_grad):
  """``value_aux_grad(p, c) -> (value, aux, dvalue/dp)`` as ``f(p, c) -> (value, aux)`` whose VJP
  in ``p`` is the cotangent times the gradient computed in the forward pass.

  For losses whose gradient is cheapest computed inside a loop (per critic member, per flow
  step): the loop runs once, keeps no activations for a later backward pass, and ``jax.grad``
  of a sum that contains ``f`` sees the ordinary gradient. ``c`` (constants) gets no cotangent;
  ``aux`` is for diagnostics (its cotangent is ignored).
  """

  @jax.custom_vjp
  def f(p, c):
    value, aux, _ = value_aux_grad(p, c)
    return value, aux

  def fwd(p, c):
    value, aux, grads = value_aux_grad(p, c)
    return (value, aux), grads

  def bwd(grads, ct):
    return jax.tree.map(lambda g: (ct[0] * g).astype(g.dtype), grads), None

  f.defvjp(fwd, bwd)
  return f


def _uses_edit(config) -> bool:
  return config.agent_name == "qam" and config.edit_scale > 0


def _uses_flow_actor(config) -> bool:
  return config.agent_name == "qam"


def _uses_one_step(config) -> bool:
  return config.agent_name == "fql" or (config.agent_name == "qam" and config.fql_alpha > 0)


class QAMAgent(flax.struct.PyTreeNode):
  """Agent state.

  Attributes:
    state: core ``TrainState``; ``params`` holds ``critic`` (leading K axis), ``bc_flow`` and,
      depending on the agent, ``actor_flow`` (v_θ), ``one_step`` (QAM-F, FQL) and
      ``edit_policy`` with the scalar ``edit_log_temp`` (QAM-E); ``extras`` holds
      ``target_critic`` and ``target_bc_flow``.
    config: frozen config (static).
    action_dim: d, the environment action dimension (static).
    obs_dim: S (static).
  """

  state: TrainState
  config: Any = flax.struct.field(pytree_node=False)
  action_dim: int = flax.struct.field(pytree_node=False)
  obs_dim: int = flax.struct.field(pytree_node=False)

  @property
  def chunk_dim(self) -> int:
    """D_a = H·d."""
    return self.config.horizon * self.action_dim

  @classmethod
  def create(
    cls,
    rng: jax.Array,
    example_obs: jax.Array,
    example_actions: jax.Array,
    config: ml_collections.ConfigDict,
    tx: optax.GradientTransformation | None = None,
    platform: str | None = None,
  ) -> "QAMAgent":
    """A fresh agent.

    The config's ``"auto"`` loop-layout fields are resolved here (``config.resolve_layout``
    for ``platform``): the agent's ``config`` holds the resolved layout, the caller's config
    (and a run's stored ``config.json``) keeps ``"auto"``.

    Args:
      rng: PRNG key (the run's root key).
      example_obs: ``(B, S)`` observations.
      example_actions: ``(B, d)`` single environment actions (the chunk is H·d wide).
      config: ``qam.config.agent_defaults()``-shaped ConfigDict.
      tx: the optimiser; default ``core.optim.make_optimizer(config.optim, config.num_updates)``
        (``QAMMethod`` passes the run's chain, built once from the run's ``config.optim``).
      platform: the backend the layout is resolved for; default ``jax.default_backend()``.
    """
    config_lib.validate(config)
    config = config_lib.resolve_layout(config, platform)
    example_obs = jnp.asarray(example_obs)
    example_actions = jnp.asarray(example_actions)
    chex.assert_rank(
      example_obs,
      2,
      exception_type=ValueError,
      custom_message=f"example_obs must have shape (B, S); got {example_obs.shape}",
    )
    chex.assert_rank(
      example_actions,
      2,
      exception_type=ValueError,
      custom_message=(f"example_actions must have shape (B, d); got {example_actions.shape}"),
    )
    obs_dim, act_dim = example_obs.shape[1], example_actions.shape[1]
    da = config.horizon * act_dim
    vel, crit, one = _nets(config, da)
    keys = jax.random.split(rng, 5)
    o = example_obs[:1]
    x = jnp.zeros((1, da))
    t = jnp.zeros((1,))
    params = {
      "critic": crit.init(keys[0], o, x)["params"],
      "bc_flow": vel.init(keys[1], o, x, t)["params"],
    }
    if _uses_flow_actor(config):
      params["actor_flow"] = vel.init(keys[2], o, x, t)["params"]  # fresh init, not v_β's
    if _uses_one_step(config):
      params["one_step"] = one.init(keys[3], o, x)["params"]
    if _uses_edit(config):
      params["edit_policy"] = _edit_net(config, da).init(keys[3], o, x)["params"]
      params["edit_log_temp"] = jnp.log(jnp.asarray(config.edit_init_temp, jnp.float32))
    if tx is None:
      tx = optim.make_optimizer(config.optim, config.num_updates)
    # Copies, not aliases of the online parameters: a donated update must not see one buffer
    # twice.
    extras = {
      "target_critic": jax.tree.map(jnp.copy, params["critic"]),
      "target_bc_flow": jax.tree.map(jnp.copy, params["bc_flow"]),
    }
    state = TrainState.create(params=params, tx=tx, rng=keys[4], extras=extras)
    return cls(
      state=state,
      config=ml_collections.FrozenConfigDict(config),
      action_dim=int(act_dim),
      obs_dim=int(obs_dim),
    )

  # ------------------------------------------------------------------ velocity helpers
  def _velocity(self, bc_params, actor_params=None):
    """v(obs, x, t) of the BC flow, or of the fine-tuned flow (residual-aware)."""
    vel, _, _ = _nets(self.config, self.chunk_dim)
    if actor_params is None:
      return lambda o, x, t: vel.apply({"params": bc_params}, o, x, t)
    if self.config.residual:
      return lambda o, x, t: (
        vel.apply({"params": bc_params}, o, x, t) + vel.apply({"params": actor_params}, o, x, t)
      )
    return lambda o, x, t: vel.apply({"params": actor_params}, o, x, t)

  def _critic_member(self):
    return critic_member(tuple(self.config.critic_hidden_dims), self.config.compute_dtype)

  def _q_fn(self, critic_params):
    _, crit, _ = _nets(self.config, self.chunk_dim)
    return lambda o, a: crit.apply({"params": critic_params}, o, a)

  def _policy_chunks(self, params, extras, obs, key, unroll: int | bool = 1):
    """Clipped flattened chunks ``(B, D_a)`` of the acting policy (no gradient); ``unroll`` is
    the ODE scan's (``flows.euler_ode``)."""
    cfg = self.config
    params = jax.lax.stop_gradient(params)
    b = obs.shape[0]
    if _uses_edit(cfg):
      key, k_edit = jax.random.split(key)
    z = _normal(key, (b, self.chunk_dim))
    if _uses_one_step(cfg):
      _, _, one = _nets(cfg, self.chunk_dim)
      a = one.apply({"params": params["one_step"]}, obs, z)
    elif cfg.agent_name == "qam" and cfg.inv_temp > 0:
      a = flows.euler_ode(
        self._velocity(extras["target_bc_flow"], params["actor_flow"]),
        obs,
        z,
        cfg.flow_steps,
        unroll,
      )
    else:  # BC flow, or QAM at λ = 0: sample v_β
      a = flows.euler_ode(self._velocity(params["bc_flow"]), obs, z, cfg.flow_steps, unroll)
    a = jnp.clip(a, -1.0, 1.0)
    if _uses_edit(cfg):  # QAM-E samples the edit (not its mode) for TD targets and evaluation
      a, _ = variants.edit_actions(
        self._edit_dist(params["edit_policy"]), obs, a, k_edit, cfg.edit_scale
      )
    return a

  def _edit_dist(self, edit_params):
    net = _edit_net(self.config, self.chunk_dim)
    return lambda o, a: net.apply({"params": edit_params}, o, a)

  # ------------------------------------------------------------------ losses
  def _constants(self, params, batch, key) -> dict:
    """The losses' stop-gradient inputs: the TD target ``y (B,)`` (Eq. 9); for the flow actor
    (``config.am_forward`` "scan" or "grid") the rollout ``xs (N+1, B, D_a)``, the lean
    adjoints ``adjs (N, B, D_a)`` and v_β̄ on the grid ``v_base_at (N, B, D_a)``; QAM-F's and
    FQL's ``teacher (B, D_a)``; QAM-E's ``a_flow (B, D_a)``. With ``"reuse"`` the rollout and
    adjoints are computed in ``total_loss`` (the rollout's v_θ forward carries the gradient).
    ``key`` is split as in ``total_loss``, so every layout draws the same numbers."""
    cfg = self.config
    extras = self.state.extras
    params = jax.lax.stop_gradient(params)
    obs = batch["observations"]
    b = obs.shape[0]
    k_next, _, k_x0, k_eps, k_one = jax.random.split(key, 5)
    unroll = cfg.flow_unroll
    out = {}
    a_next = self._policy_chunks(params, extras, batch["next_observations"], k_next, unroll)
    next_q = self._q_fn(extras["target_critic"])(batch["next_observations"], a_next)
    out["y"] = critic.pessimistic_target(
      next_q, batch["rewards"], batch["masks"], cfg.discount, cfg.horizon, cfg.rho
    )
    if _uses_flow_actor(cfg) and cfg.am_forward != "reuse":
      n = cfg.flow_steps
      v_base = self._velocity(extras["target_bc_flow"])
      v_fine = self._velocity(extras["target_bc_flow"], params["actor_flow"])
      x0 = _normal(k_x0, (b, self.chunk_dim))
      eps = _normal(k_eps, (n - 1, b, self.chunk_dim))
      xs = adjoint.rollout(v_fine, v_base, obs, x0, eps, n, unroll=unroll)
      if cfg.critic_loop == "scan":
        ((_, members),) = extras["target_critic"].items()
        adj_n = adjoint.terminal_adjoint_by_member(
          self._critic_member(), members, obs, xs[-1], cfg.inv_temp
        )
      else:
        adj_n = adjoint.terminal_adjoint(
          self._q_fn(extras["target_critic"]), obs, xs[-1], cfg.inv_temp
        )
      out["xs"] = xs
      out["adjs"] = adjoint.lean_adjoint(v_base, obs, xs, adj_n, n, unroll=unroll)
      out["v_base_at"] = adjoint.base_velocities_on_grid(v_base, obs, xs, n)
    if _uses_one_step(cfg):
      z = _normal(k_one, (b, self.chunk_dim))
      if cfg.agent_name == "fql":
        teacher_v = self._velocity(params["bc_flow"])
      else:
        teacher_v = self._velocity(extras["target_bc_flow"], params["actor_flow"])
      out["teacher"] = flows.euler_ode(teacher_v, obs, z, cfg.flow_steps, unroll)
    if _uses_edit(cfg):
      k_z, _ = jax.random.split(k_one)
      z = _normal(k_z, (b, self.chunk_dim))
      v_sg = self._velocity(extras["target_bc_flow"], params["actor_flow"])
      out["a_flow"] = jnp.clip(flows.euler_ode(v_sg, obs, z, cfg.flow_steps, unroll), -1.0, 1.0)
    return jax.lax.stop_gradient(out)

  def total_loss(self, params, batch, key):
    """Sum of the losses of this agent and a dict of diagnostics.

    Args:
      params: the joint parameter tree.
      batch: dict with ``observations (B, S)``, ``actions (B, H, d)``, ``rewards (B,)``
        (discounted chunk returns), ``masks (B,)``, ``valid (B,)``, ``next_observations (B, S)``.
      key: PRNG key.
    Returns:
      (loss, info).
    """
    cfg = self.config
    extras = self.state.extras
    consts = self._constants(params, batch, key)
    obs = batch["observations"]
    b = obs.shape[0]
    actions = batch["actions"].reshape(b, self.chunk_dim)
    _, k_bc, k_x0, k_eps, k_one = jax.random.split(key, 5)
    info = {}

    # Critic: pessimistic ensemble TD on action chunks.
    y = consts["y"]
    if cfg.critic_loop == "scan":

      def td_value_q_grad(cp, c):
        ((name, members),) = cp.items()
        loss, q, grads = critic.td_loss_and_grad_by_member(self._critic_member(), members, *c)
        return loss, q, {name: grads}

      q_loss, q = _grad_in_forward(td_value_q_grad)(
        params["critic"], (obs, actions, y, batch["valid"])
      )
    else:
      q = self._q_fn(params["critic"])(obs, actions)
      q_loss = critic.td_loss(q, y, batch["valid"])
    info.update(
      {
        "critic/loss": q_loss,
        "critic/q_mean": jnp.mean(q),
        "critic/q_std": jnp.mean(jnp.std(q, axis=0)),
        "critic/target_mean": jnp.mean(y),
      }
    )
    total = q_loss

    # Behaviour flow (Eq. 2).
    bc_loss = flows.flow_matching_loss(
      self._velocity(params["bc_flow"]), obs, actions, k_bc, batch["valid"]
    )
    info["bc/fm_loss"] = bc_loss
    total = total + bc_loss

    # Fine-tuned flow by lean adjoint matching.
    if _uses_flow_actor(cfg):
      n = cfg.flow_steps
      v_base = self._velocity(extras["target_bc_flow"])
      v_fine = self._velocity(extras["target_bc_flow"], params["actor_flow"])
      if cfg.am_forward == "scan":
        # v_θ's forward and backward one flow step at a time, gradients summed in the loop.
        xs, adjs = consts["xs"], consts["adjs"]

        def am_value_grad(p, c):
          v_p = lambda pp, o, x, t: self._velocity(extras["target_bc_flow"], pp)(o, x, t)
          loss, grads = adjoint.adjoint_matching_loss_and_grad_by_step(
            v_p, p, *c, n, unroll=cfg.flow_unroll
          )
          return loss, (), grads

        am_loss, _ = _grad_in_forward(am_value_grad)(
          params["actor_flow"], (obs, xs, adjs, consts["v_base_at"])
        )
      elif cfg.am_forward == "grid":
        # One batched v_θ forward on the N·B points (s, X_k, t_k) of the rollout.
        xs, adjs = consts["xs"], consts["adjs"]
        n_b = n * b
        obs_rep = jnp.broadcast_to(obs[None], (n,) + obs.shape).reshape(n_b, -1)
        t_flat = jnp.repeat(jnp.arange(n) * (1.0 / n), b)
        v_fine_at = v_fine(obs_rep, xs[:n].reshape(n_b, -1), t_flat).reshape(n, b, -1)
        am_loss = adjoint.adjoint_matching_loss(v_fine_at, consts["v_base_at"], adjs, n)
      else:  # "reuse": the rollout's v_θ forward passes are the loss's (k ≤ N−2)
        x0 = _normal(k_x0, (b, self.chunk_dim))
        eps = _normal(k_eps, (n - 1, b, self.chunk_dim))
        xs, v_fine_at = adjoint.rollout_with_velocities(v_fine, v_base, obs, x0, eps, n)
        adj_n = adjoint.terminal_adjoint(
          self._q_fn(extras["target_critic"]), obs, xs[-1], cfg.inv_temp
        )
        adjs = jax.lax.stop_gradient(
          adjoint.lean_adjoint(v_base, obs, xs, adj_n, n, unroll=cfg.flow_unroll)
        )
        am_loss = adjoint.adjoint_matching_loss(
          v_fine_at, adjoint.base_velocities_on_grid(v_base, obs, xs, n), adjs, n
        )
      info.update(
        {
          "actor/am_loss": am_loss,
          "actor/adj_max": jnp.max(jnp.abs(adjs)),
          "actor/adj_mean": jnp.mean(adjs),
          "actor/adj_std": jnp.std(adjs),
        }
      )
      total = total + am_loss

    # One-step policy: FQL (teacher v_β) or QAM-F (teacher v_θ).
    if _uses_one_step(cfg):
      _, _, one = _nets(cfg, self.chunk_dim)
      z = _normal(k_one, (b, self.chunk_dim))
      f_loss, f_info = baselines.one_step_policy_loss(
        lambda o, zz: one.apply({"params": params["one_step"]}, o, zz),
        self._q_fn(jax.lax.stop_gradient(params["critic"])),
        obs,
        z,
        consts["teacher"],
        cfg.fql_alpha,
      )
      info.update(
        {
          "one_step/loss": f_loss,
          "one_step/q_loss": f_info["q_loss"],
          "one_step/distill_loss": f_info["distill_loss"],
        }
      )
      total = total + f_loss

    # QAM-E edit policy and its temperature; gradients into ψ and log α_e only.
    if _uses_edit(cfg):
      _, k_e = jax.random.split(k_one)
      e_loss, e_info = variants.edit_policy_loss(
        self._edit_dist(params["edit_policy"]),
        self._q_fn(jax.lax.stop_gradient(params["critic"])),
        obs,
        consts["a_flow"],
        k_e,
        cfg.edit_scale,
        params["edit_log_temp"],
        cfg.edit_target_entropy * self.chunk_dim,
      )
      info.update({f"edit/{k}": v for k, v in e_info.items()})
      total = total + e_loss

    info["total_loss"] = total
    return total, info

  # ------------------------------------------------------------------ public API
  def _update(self, batch) -> tuple["QAMAgent", dict]:
    """One clipped Adam step on the sum of the losses, then Polyak targets.

    Args:
      batch: see ``total_loss``; leading dimension B.
    Returns:
      (new agent, info) with namespaced scalar diagnostics and ``grad_norm``.
    """
    chex.assert_shape(
      batch["actions"],
      (None, self.config.horizon, self.action_dim),
      exception_type=ValueError,
      custom_message=(
        f"batch['actions'] must have shape (B, {self.config.horizon}, "
        f"{self.action_dim}); got {batch['actions'].shape}"
      ),
    )
    key = self.state.step_key()
    grads, info = jax.grad(self.total_loss, has_aux=True)(self.state.params, batch, key)
    tau = self.config.tau
    new_state, gnorm = self.state.apply_gradients(grads)
    extras = {
      "target_critic": optim.ema_update(
        self.state.extras["target_critic"], new_state.params["critic"], 1.0 - tau
      ),
      "target_bc_flow": optim.ema_update(
        self.state.extras["target_bc_flow"], new_state.params["bc_flow"], 1.0 - tau
      ),
    }
    info["grad_norm"] = gnorm
    return self.replace(state=new_state.replace(extras=extras)), info

  # ``update`` leaves its input agent intact; ``update_donated`` donates the agent's buffers, so
  # XLA writes the new state into them: the input agent is invalid afterwards.
  update = jax.jit(_update)
  update_donated = jax.jit(_update, donate_argnums=(0,))

  @jax.jit
  def sample_actions(self, obs: jax.Array, rng: jax.Array) -> jax.Array:
    """Action chunks by the deterministic Euler ODE (or the one-step policy), clipped.

    Args:
      obs: ``(B, S)``.
      rng: key for the initial noise x_0 ~ N(0, I).
    Returns:
      ``(B, H, d)`` chunks in [−1, 1]; execute open-loop.
    """
    chex.assert_shape(
      obs,
      (None, self.obs_dim),
      exception_type=ValueError,
      custom_message=f"obs must have shape (B, {self.obs_dim}); got {obs.shape}",
    )
    a = self._policy_chunks(self.state.params, self.state.extras, obs, rng)
    return a.reshape(obs.shape[0], self.config.horizon, self.action_dim)
