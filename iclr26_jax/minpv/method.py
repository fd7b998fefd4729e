"""MinPV through the shared trainer: time-score density-ratio estimation on Gaussian MI.

Chen et al., "Don't Forget Its Variance! The Minimum Path Variance Principle …" (ICLR 2026),
reference code github.com/Hoemr/OpenDRE (``--mvp --condition True``). Parameters are
``{"net": θ, "path": φ}`` trained by one optax chain (``losses.make_optimizer``); a fixed schedule
has φ = {}. ``path.training="presolve_freeze"`` fits φ to the path-only problem at initialisation
(``analysis.optimize_path`` with m = E‖x1‖²) and freezes it; ``frozen`` keeps the initial φ.

Logged: ``tsm/loss``, ``tsm/loss_normalised``, ``tsm/data_loss``, ``tsm/var_mean``,
``path/penalty``, ``path/alpha_at_{0.1,…,0.9}``, ``path/a_min``, ``path/b_min``, ``path/w_max``,
``train/grad_norm`` (``implicit/...`` for the DRE-∞ objective); at evaluation ``eval/mi_estimate``,
``eval/mi_true`` (analytic MI), ``eval/mi_sample_truth`` (mean analytic log r on the evaluation
samples, the fair target), ``eval/mae`` (|estimate − sample truth|), ``eval/log_ratio_rmse``
(pointwise), ``eval/quad_gap`` (estimate at gap_factor × nodes minus estimate).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from iclr26_jax.core import config as config_lib
from iclr26_jax.core import optim as optim_lib
from iclr26_jax.core import sharding as shd
from iclr26_jax.core.train_state import TrainState
from iclr26_jax.core.trainer import Method
from iclr26_jax.minpv import analysis, benchmarks, estimator, losses, networks
from iclr26_jax.minpv import paths as paths_lib

ALPHA_PROBES = (0.1, 0.25, 0.5, 0.75, 0.9)


def _err(key, msg):
  return config_lib.ConfigError(f"config key '{key}' {msg}")


def make_task(cfg) -> benchmarks.GaussianMITask:
  """The benchmark named by ``cfg.data`` (only ``gaussian_mi``)."""
  if cfg.data.task != "gaussian_mi":
    raise _err("data.task", f"must be 'gaussian_mi'; got {cfg.data.task!r}")
  rho = float(cfg.data.rho) if cfg.data.rho >= 0 else None
  mi = float(cfg.data.mi) if (rho is None and cfg.data.mi > 0) else None
  try:
    return benchmarks.make_task(int(cfg.data.dim), mi=mi, rho=rho)
  except ValueError as e:
    raise _err("data", str(e)) from None


def loss_settings(cfg) -> losses.LossSettings:
  """``LossSettings`` from the config, with the spec §15 consistency checks."""
  lc = cfg.loss
  if cfg.path.training not in ("joint", "presolve_freeze", "frozen"):
    raise _err("path.training", f"must be joint|presolve_freeze|frozen; got {cfg.path.training!r}")
  trainable = cfg.path.name == "kmm" and cfg.path.training == "joint"
  if lc.objective == "implicit" and trainable:
    raise _err("loss.objective", "'implicit' has no MinPV penalty: a trainable kmm path needs "
               "'conditional' or 'joint' (or path.training='frozen')")
  try:
    return losses.LossSettings(
        interpolant=cfg.interpolant, objective=lc.objective, weights=lc.weights,
        var_for_weights=lc.var_for_weights, var_floor=float(lc.var_floor),
        target_eps=float(lc.target_eps), cross_term=lc.cross_term, penalty=trainable,
        penalty_t=lc.penalty_t, time_sampler=lc.time_sampler, gamma=float(cfg.bridge.gamma),
        eps_b=float(cfg.bridge.eps_b), eps=float(cfg.path.eps),
        data_weight=float(lc.data_weight), flip_cross_sign=bool(lc.flip_cross_sign))
  except ValueError as e:
    raise _err("loss", str(e)) from None


def path_metrics(path_fn, phi) -> dict:
  """``path/alpha_at_*`` and, for the KMM, the smallest shapes and the largest weight."""
  co = path_fn(phi, jnp.asarray(ALPHA_PROBES, jnp.float32))
  out = {f"path/alpha_at_{p}": co.alpha[i] for i, p in enumerate(ALPHA_PROBES)}
  if phi:
    w, a, b = paths_lib.kmm_shapes(phi)
    out.update({"path/a_min": jnp.min(a), "path/b_min": jnp.min(b), "path/w_max": jnp.max(w)})
  return out


class MinPVMethod(Method):
  """Score-based DRE with a (learned) interpolation path; see the module docstring."""
  name = "minpv"

  def __init__(self, config):
    super().__init__(config)
    c = config
    self.task = make_task(c)
    self.settings = loss_settings(c)
    if c.path.name not in paths_lib.PATH_NAMES:
      raise _err("path.name", f"must be one of {paths_lib.PATH_NAMES}; got {c.path.name!r}")
    if c.path.constraint not in paths_lib.CONSTRAINTS:
      raise _err("path.constraint", f"must be one of {paths_lib.CONSTRAINTS}; "
                 f"got {c.path.constraint!r}")
    if c.estimate.grid not in estimator.GRIDS:
      raise _err("estimate.grid", f"must be one of {estimator.GRIDS}; got {c.estimate.grid!r}")
    self.path_fn = paths_lib.get_path(c.path.name, constraint=c.path.constraint,
                                      eps=float(c.path.eps))
    self.trainable = c.path.name == "kmm" and c.path.training == "joint"
    self.model = networks.ScoreNetwork(
        dim=self.task.dim, width=int(c.model.width), depth=int(c.model.depth),
        time_features=int(c.model.time_features), data_head=c.loss.objective == "joint",
        norm=bool(c.model.norm))
    self.tx = losses.make_optimizer(c.optim, int(c.num_steps), path_trainable=self.trainable,
                                    path_weight_decay=float(c.path.weight_decay),
                                    path_lr=float(c.path.lr))
    ekey = jax.random.PRNGKey(int(c.data.eval_seed))
    self.x_eval = np.asarray(benchmarks.sample_p1(ekey, int(c.data.eval_size), self.task))
    self.log_r_eval = np.asarray(benchmarks.log_ratio(jnp.asarray(self.x_eval), self.task))
    self.second_moment = float(np.mean(np.sum(self.x_eval.astype(np.float64) ** 2, axis=1)))

  # -- state and update ------------------------------------------------------------------------
  def _score(self, net_params, x, t):
    return self.model.apply({"params": net_params}, x, t)

  def init_state(self, rng):
    c = self.config
    d = self.task.dim
    net = self.model.init(jax.random.fold_in(rng, 1), jnp.zeros((1, d)), jnp.zeros((1,)))
    phi = paths_lib.init_path_params(c.path.name, int(c.path.num_components))
    if c.path.name == "kmm" and c.path.training == "presolve_freeze":
      phi = analysis.optimize_path(
          phi, dim=d, m=self.second_moment, floor=float(c.loss.var_floor),
          constraint=c.path.constraint, num_steps=int(c.path.presolve_steps),
          learning_rate=float(c.path.presolve_lr), eps=float(c.path.eps)).params
    params = {"net": net["params"], "path": phi}
    extras = {"ema": params} if c.ema_decay > 0 else {}
    return TrainState.create(params=params, tx=self.tx, rng=rng, apply_fn=self._score,
                             extras=extras)

  def update(self, state, batch):
    key = state.step_key()
    loss_fn = lambda p: losses.minpv_loss(self._score, p, batch, key, self.path_fn,
                                          self.settings)
    (_, info), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
    extras = state.extras
    new_state, grad_norm = state.apply_gradients(grads)
    if self.config.ema_decay > 0:
      ema = optim_lib.ema_update(extras["ema"], new_state.params, float(self.config.ema_decay))
      new_state = new_state.replace(extras={"ema": ema})
    metrics = dict(info)
    metrics["train/grad_norm"] = grad_norm
    metrics.update(path_metrics(self.path_fn, new_state.params["path"]))
    return new_state, metrics

  def get_batch(self, step):
    c = self.config
    n, d = int(c.batch_size), self.task.dim
    rng = np.random.default_rng([int(c.seed), int(step), 17])
    x0 = rng.standard_normal((n, d), dtype=np.float32)
    e = rng.standard_normal((n, d // 2, 2), dtype=np.float32)
    rho = self.task.rho
    x1 = np.stack([e[..., 0], rho * e[..., 0] + np.sqrt(1.0 - rho ** 2) * e[..., 1]],
                  axis=-1).reshape(n, d).astype(np.float32)
    rows = shd.process_slice(n)
    return {"x0": x0[rows], "x1": x1[rows]}

  # -- evaluation ------------------------------------------------------------------------------
  @functools.cached_property
  def _log_ratio(self):
    c = self.config

    def fn(params, x, num_nodes):
      nodes, weights = estimator.quadrature_grid(
          num_nodes, t_start=float(c.estimate.t_start), t_end=1.0 - float(c.path.eps),
          grid=c.estimate.grid, path_fn=self.path_fn, path_params=params["path"])
      score = lambda xx, tt: self._score(params["net"], xx, tt)[0]
      return estimator.integrate_time_score(score, x, nodes, weights)

    return jax.jit(fn, static_argnums=2)

  def evaluate(self, state):
    c = self.config
    params = state.extras["ema"] if c.ema_decay > 0 else state.params
    x = jnp.asarray(self.x_eval)
    nodes = int(c.estimate.nodes)
    lr_hat = np.asarray(self._log_ratio(params, x, nodes), np.float64)
    lr_fine = np.asarray(self._log_ratio(params, x, nodes * int(c.estimate.gap_factor)),
                         np.float64)
    truth = self.log_r_eval.astype(np.float64)
    mi_hat = float(np.mean(lr_hat))
    out = {"eval/mi_estimate": mi_hat, "eval/mi_true": self.task.mi,
           "eval/mi_sample_truth": float(np.mean(truth)),
           "eval/mae": abs(mi_hat - float(np.mean(truth))),
           "eval/log_ratio_rmse": float(np.sqrt(np.mean((lr_hat - truth) ** 2))),
           "eval/log_ratio_std": float(np.std(lr_hat)),
           "eval/quad_gap": float(np.mean(lr_fine)) - mi_hat}
    out.update({k: float(v) for k, v in path_metrics(self.path_fn, params["path"]).items()})
    return out
