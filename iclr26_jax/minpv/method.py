"""MinPV through the shared trainer: time-score density-ratio estimation on MI and density tasks.

Chen et al., "Don't Forget Its Variance! The Minimum Path Variance Principle …" (ICLR 2026),
reference code github.com/Hoemr/OpenDRE (``--mvp --condition True``). Parameters are
``{"net": θ, "path": φ}`` trained by one optax chain (``losses.make_joint_optimizer``); a fixed
schedule has φ = {}. ``path.training="presolve_freeze"`` fits φ to the path-only problem at
initialisation (``analysis.optimize_path`` with m = E‖x1‖²) and freezes it; ``frozen`` keeps the
initial φ. Holds ``MinPVMethod``, the tasks ``MITask`` / ``DensityTask`` (``TASKS``),
``loss_settings`` and ``validate``. The tasks, models and logged metrics: docs/methods/minpv.md
("Configuration and logged metrics").
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from iclr26_jax.core import config as config_lib
from iclr26_jax.core import optim as optim_lib
from iclr26_jax.core import sharding as shd
from iclr26_jax.core.train_state import TrainState, stream_key
from iclr26_jax.core.trainer import Method
from iclr26_jax.minpv import analysis, benchmarks, estimator, losses, networks
from iclr26_jax.minpv import data as data_lib
from iclr26_jax.minpv import paths as paths_lib

ALPHA_PROBES = (0.1, 0.25, 0.5, 0.75, 0.9)


def validate(config) -> None:
  """Range checks of MinPV's sizes, counts and rates (``ConfigError`` naming the dotted key);
  names and combinations are checked where they are used (``make_data_task``, ``loss_settings``)."""
  config_lib.positive(config, "data.dim", "model.width", "model.depth", "model.time_features")
  config_lib.positive(config, "path.num_components", "estimate.nodes", "estimate.chunk")
  config_lib.positive(config, "estimate.max_steps", "estimate.gap_factor", "loss.is_grid")
  config_lib.positive(config, "loss.is_refresh")
  config_lib.nonneg(config, "data.eval_size", "path.presolve_steps", "path.weight_decay")
  config_lib.nonneg(config, "path.presolve_lr", "path.eps", "loss.var_floor", "loss.target_eps")
  config_lib.nonneg(config, "loss.data_weight", "bridge.gamma", "bridge.eps_b")
  config_lib.nonneg(config, "estimate.rtol", "estimate.atol", "data.logit_lambda")
  config_lib.check_range(config, "data.test_fraction", gt=0, lt=1)
  config_lib.fraction(config, "ema_decay", "estimate.t_start")


def _err(key, msg):
  return config_lib.ConfigError(f"config key '{key}' {msg}")


MI_TASKS = {
  "gaussian_mi": None,
  "gauss_mi": "gauss",
  "half_cube_mi": "half_cube",
  "asinh_mi": "asinh",
  "cubic_mi": "cubic",  # name -> coordinate map
  "additive_noise_mi": "additive_noise",  # (not Gaussian pairs:)
  "gamma_exponential_mi": "gamma_exponential",
}
# Non-Gaussian pair tasks: map -> (make(dim, cfg.data), joint(rng, n, task), log_ratio(x, task)).
PAIR_TASKS = {
  "additive_noise": (
    lambda dim, d: benchmarks.make_additive_noise_task(dim, float(d.noise_eps)),
    benchmarks.additive_noise_joint,
    benchmarks.additive_noise_log_ratio,
  ),
  "gamma_exponential": (
    lambda dim, d: benchmarks.make_gamma_exponential_task(dim, float(d.gamma_shape)),
    benchmarks.gamma_exponential_joint,
    benchmarks.gamma_exponential_log_ratio,
  ),
}
DENSITY_TASKS = data_lib.TOYS + ("digits", "uci")
TASKS = tuple(MI_TASKS) + DENSITY_TASKS


def _gaussian_args(cfg):
  rho = float(cfg.data.rho) if cfg.data.rho >= 0 else None
  mi = float(cfg.data.mi) if (rho is None and cfg.data.mi > 0) else None
  return dict(mi=mi, rho=rho)


def make_task(cfg) -> benchmarks.GaussianMITask:
  """The underlying Gaussian MI task of ``cfg.data`` (Gaussian-pair MI tasks only)."""
  if cfg.data.name not in MI_TASKS or MI_TASKS[cfg.data.name] in PAIR_TASKS:
    raise _err(
      "data.name", f"must be one of the MI tasks {tuple(MI_TASKS)} here; got {cfg.data.name!r}"
    )
  try:
    return benchmarks.make_task(int(cfg.data.dim), **_gaussian_args(cfg))
  except ValueError as e:
    raise _err("data", str(e)) from None


class MITask:
  """An MI task: p1 = joint, p0 = product of marginals, analytic log-ratio on held-out data.

  Attributes: kind "mi", dim, mi (analytic), p0_is_std_normal, x_eval (n, d) float32 joint
  draws, log_r_eval (n,) analytic log-ratios, gaussian (the underlying ``GaussianMITask``; None
  for the non-Gaussian pair tasks, whose task is ``noise``).
  """

  kind = "mi"

  def __init__(self, cfg):
    self.map = MI_TASKS[cfg.data.name]
    n = int(cfg.data.eval_size)
    if n < 2:
      raise _err("data.eval_size", f"must be >= 2 for MI tasks; got {n}")
    if self.map in PAIR_TASKS:
      make, self._joint, log_ratio = PAIR_TASKS[self.map]
      try:
        self.noise = make(int(cfg.data.dim), cfg.data)
      except ValueError as e:
        raise _err("data", str(e)) from None
      self.gaussian = self.mapped = None
      self.dim, self.mi, self.p0_is_std_normal = self.noise.dim, self.noise.mi, False
      x = self._joint(np.random.default_rng(int(cfg.data.eval_seed)), n, self.noise)
      self.x_eval = x.astype(np.float32)
      self.log_r_eval = np.asarray(log_ratio(x, self.noise))
      return
    self.gaussian = make_task(cfg)
    self.dim, self.rho, self.mi = self.gaussian.dim, self.gaussian.rho, self.gaussian.mi
    ekey = jax.random.PRNGKey(int(cfg.data.eval_seed))
    if self.map is None:
      self.mapped = None
      self.p0_is_std_normal = True
      x = benchmarks.sample_p1(ekey, n, self.gaussian)
      lr = benchmarks.true_log_ratio(x, self.gaussian)
    else:
      self.mapped = benchmarks.MappedMITask(self.gaussian, self.map)
      self.p0_is_std_normal = self.mapped.p0_is_std_normal
      x = benchmarks.sample_joint(ekey, n, self.mapped)
      lr = benchmarks.mapped_log_ratio(x, self.mapped)
    self.x_eval = np.asarray(x, np.float32)
    self.log_r_eval = np.asarray(lr)

  def _pairs(self, rng, n):
    """(n, d) float32 draws of the correlated Gaussian pair."""
    e = rng.standard_normal((n, self.dim // 2, 2), dtype=np.float32)
    rho = self.rho
    return (
      np.stack([e[..., 0], rho * e[..., 0] + np.sqrt(1.0 - rho**2) * e[..., 1]], axis=-1)
      .reshape(n, self.dim)
      .astype(np.float32)
    )

  def batch(self, rng: np.random.Generator, n: int) -> dict:
    """``{"x0": p0 draws (n, d), "x1": p1 draws (n, d)}`` float32."""
    if self.map in PAIR_TASKS:
      x1 = self._joint(rng, n, self.noise)
      x0 = self._joint(rng, n, self.noise).reshape(n, self.dim // 2, 2)
      x0[..., 1] = np.roll(x0[..., 1], 1, axis=0)  # shuffled pairing
      return {"x0": x0.reshape(n, self.dim).astype(np.float32), "x1": x1.astype(np.float32)}
    if self.mapped is None:
      x0 = rng.standard_normal((n, self.dim), dtype=np.float32)
      return {"x0": x0, "x1": self._pairs(rng, n)}
    x1 = benchmarks.apply_map(self._pairs(rng, n), self.mapped)
    x0 = np.asarray(
      benchmarks.shuffle_pairs(benchmarks.apply_map(self._pairs(rng, n), self.mapped))
    )
    return {"x0": x0.astype(np.float32), "x1": x1.astype(np.float32)}


class DensityTask:
  """A density task with p0 = N(0, I) on preprocessed coordinates z.

  Attributes: kind "density", dim, p0_is_std_normal (True), z_test (n, D) float32,
  logdet_test (n,) float64 (log|det ∂z/∂x| at the test points), nll_offset (nats added to the
  data-space NLL: D log 17 for digits, whose NLL is on the pixel scale), nll_true (exact test NLL
  or None), log_r_true (n,) exact log r(z_test) or None.
  """

  kind = "density"
  p0_is_std_normal = True

  def __init__(self, cfg):
    d = cfg.data
    self.name = d.name
    self.nll_offset = 0.0
    self.nll_true = None
    eval_rng = np.random.default_rng(int(d.eval_seed))
    n_eval = int(d.eval_size)
    self._train = None
    toy_lp = None
    if d.name in data_lib.TOYS:
      mean, cov = data_lib.toy_moments(d.name)
      std = np.sqrt(np.diag(cov)) if d.standardize else np.ones(2)
      self.std = data_lib.Standardizer(mean, std)
      if n_eval < 1:
        raise _err("data.eval_size", f"must be >= 1 for the toys; got {n_eval}")
      x_test = data_lib.sample_toy(d.name, eval_rng, n_eval)
      toy_lp = data_lib.toy_log_density(d.name, x_test)
    elif d.name == "digits":
      pixels = data_lib.load_digits_pixels()
      tr, te = _split_rows(pixels.shape[0], float(d.test_fraction))
      self._pixels_train = pixels[tr]
      lam = float(d.logit_lambda)
      if not 0.0 < lam < 0.5:
        raise _err("data.logit_lambda", f"must be in (0, 0.5); got {lam}")
      self._lam = lam
      w_fit, _ = data_lib.logit_transform(
        data_lib.dequantize_digits(self._pixels_train, np.random.default_rng(0)), lam
      )
      self.std = (
        data_lib.Standardizer.fit(w_fit)
        if d.standardize
        else data_lib.Standardizer(np.zeros(64), np.ones(64))
      )
      test_pixels = pixels[te] if n_eval <= 0 else pixels[te][:n_eval]
      v = data_lib.dequantize_digits(test_pixels, eval_rng)
      x_test, logdet_logit = data_lib.logit_transform(v, lam)
      self.nll_offset = 64 * np.log(data_lib.DIGITS_LEVELS)
    elif d.name == "uci":
      try:
        splits = data_lib.load_uci(str(d.path))
      except (FileNotFoundError, ValueError) as e:
        raise _err("data.path", str(e)) from None
      self._train = splits["train"]
      self.std = (
        data_lib.Standardizer.fit(self._train)
        if d.standardize
        else data_lib.Standardizer(np.zeros(self._train.shape[1]), np.ones(self._train.shape[1]))
      )
      x_test = splits["test"] if n_eval <= 0 else splits["test"][:n_eval]
      self._train = self.std.forward(self._train)[0].astype(np.float32)
    else:
      raise _err("data.name", f"must be one of {TASKS}; got {d.name!r}")
    z, logdet = self.std.forward(x_test)
    if d.name == "digits":
      logdet = logdet + logdet_logit
    self.z_test = z.astype(np.float32)
    self.logdet_test = logdet
    self.dim = int(z.shape[1])
    self.log_r_true = None
    if toy_lp is not None:
      # Exact log r(z) = log p_z(z) − log N(z; 0, I), p_z(z) = p_x(x) / |det ∂z/∂x|.
      self.nll_true = float(-np.mean(toy_lp))
      log_n = -0.5 * np.sum(z**2, 1) - 0.5 * self.dim * np.log(2 * np.pi)
      self.log_r_true = toy_lp - logdet - log_n

  def batch(self, rng: np.random.Generator, n: int) -> dict:
    """``{"x0": N(0, I) draws (n, D), "x1": preprocessed data (n, D)}`` float32."""
    x0 = rng.standard_normal((n, self.dim), dtype=np.float32)
    if self.name in data_lib.TOYS:
      x1 = self.std.forward(data_lib.sample_toy(self.name, rng, n))[0]
    elif self.name == "digits":
      idx = rng.integers(0, self._pixels_train.shape[0], n)
      w, _ = data_lib.logit_transform(
        data_lib.dequantize_digits(self._pixels_train[idx], rng), self._lam
      )
      x1 = self.std.forward(w)[0]
    else:
      x1 = self._train[rng.integers(0, self._train.shape[0], n)]
    return {"x0": x0, "x1": np.asarray(x1, np.float32)}

  def nll(self, log_r: np.ndarray) -> float:
    """Mean data-space NLL (nats per example) from log r̂ (n,) at ``z_test``."""
    z = self.z_test.astype(np.float64)
    log_n = -0.5 * np.sum(z**2, 1) - 0.5 * self.dim * np.log(2 * np.pi)
    return float(
      -np.mean(np.asarray(log_r, np.float64) + log_n + self.logdet_test) + self.nll_offset
    )


def _split_rows(n, test_fraction):
  """``data.split_rows`` with the error naming the config key."""
  try:
    return data_lib.split_rows(n, test_fraction)
  except ValueError as e:
    raise _err("data.test_fraction", str(e)) from None


def make_data_task(cfg):
  """``MITask`` or ``DensityTask`` for ``cfg.data.name`` (ConfigError listing ``TASKS``)."""
  if cfg.data.name in MI_TASKS:
    return MITask(cfg)
  if cfg.data.name in DENSITY_TASKS:
    return DensityTask(cfg)
  raise _err("data.name", f"must be one of {TASKS}; got {cfg.data.name!r}")


def loss_settings(cfg) -> losses.LossSettings:
  """``LossSettings`` from the config, with its consistency checks (e.g. a trainable KMM path
  needs a conditional objective, the one that carries the MinPV penalty)."""
  lc = cfg.loss
  if cfg.path.training not in ("joint", "presolve_freeze", "frozen"):
    raise _err("path.training", f"must be joint|presolve_freeze|frozen; got {cfg.path.training!r}")
  trainable = cfg.path.name == "kmm" and cfg.path.training == "joint"
  if lc.objective == "implicit" and trainable:
    raise _err(
      "loss.objective",
      "'implicit' has no MinPV penalty: a trainable kmm path needs "
      "'conditional' or 'joint' (or path.training='frozen')",
    )
  try:
    return losses.LossSettings(
      interpolant=cfg.interpolant,
      objective=lc.objective,
      weights=lc.weights,
      var_for_weights=lc.var_for_weights,
      var_floor=float(lc.var_floor),
      target_eps=float(lc.target_eps),
      cross_term=lc.cross_term,
      penalty=trainable,
      penalty_t=lc.penalty_t,
      time_sampler=lc.time_sampler,
      is_moments=lc.is_moments,
      is_grid=int(lc.is_grid),
      gamma=float(cfg.bridge.gamma),
      eps_b=float(cfg.bridge.eps_b),
      eps=float(cfg.path.eps),
      data_weight=float(lc.data_weight),
      normalizer=lc.normalizer,
      flip_cross_sign=bool(lc.flip_cross_sign),
    )
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
    self.data = make_data_task(c)
    self.task = self.data.gaussian if self.data.kind == "mi" else None
    self.settings = loss_settings(c)
    if (
      c.interpolant == "plain" and c.loss.objective != "implicit" and not self.data.p0_is_std_normal
    ):
      raise _err(
        "interpolant",
        f"'plain' with the {c.loss.objective!r} objective needs "
        f"p0 = N(0, I), which task {c.data.name!r} does not have (shuffled pairs); use "
        "interpolant=bridge or loss.objective=implicit",
      )
    if c.path.name not in paths_lib.PATH_NAMES:
      raise _err("path.name", f"must be one of {paths_lib.PATH_NAMES}; got {c.path.name!r}")
    if c.path.constraint not in paths_lib.CONSTRAINTS:
      raise _err(
        "path.constraint", f"must be one of {paths_lib.CONSTRAINTS}; got {c.path.constraint!r}"
      )
    if c.estimate.grid not in estimator.GRIDS:
      raise _err("estimate.grid", f"must be one of {estimator.GRIDS}; got {c.estimate.grid!r}")
    if c.estimate.method not in estimator.METHODS:
      raise _err(
        "estimate.method", f"must be one of {estimator.METHODS}; got {c.estimate.method!r}"
      )
    if int(c.estimate.chunk) < 1:
      raise _err("estimate.chunk", f"must be >= 1; got {c.estimate.chunk}")
    self.path_fn = paths_lib.get_path(
      c.path.name, constraint=c.path.constraint, eps=float(c.path.eps)
    )
    self.trainable = c.path.name == "kmm" and c.path.training == "joint"
    # The IS grid's φ is kept in the state only when φ trains (otherwise it is the fixed φ).
    self._is_refresh = self.trainable and c.loss.time_sampler == "is"
    if self._is_refresh and int(c.loss.is_refresh) < 1:
      raise _err("loss.is_refresh", f"must be >= 1; got {c.loss.is_refresh}")
    time_scale = networks.time_scale_for(c.loss.objective, float(c.model.time_scale))
    if c.model.kind == "mlp":
      self.model = networks.ScoreNetwork(
        dim=self.data.dim,
        width=int(c.model.width),
        depth=int(c.model.depth),
        time_features=int(c.model.time_features),
        data_head=c.loss.objective == "joint",
        norm=bool(c.model.norm),
        time_scale=time_scale,
      )
    elif c.model.kind == "quadratic":
      if self.data.kind != "mi" or self.data.map is not None:
        raise _err(
          "model.kind",
          "'quadratic' is the parametric Gaussian time-score model: "
          f"only for data.name='gaussian_mi'; got {c.data.name!r}",
        )
      self.model = networks.QuadraticTimeScore(
        dim=self.data.dim,
        width=int(c.model.width),
        time_features=int(c.model.time_features),
        data_head=c.loss.objective == "joint",
        time_scale=time_scale,
      )
    else:
      raise _err("model.kind", f"must be 'mlp' or 'quadratic'; got {c.model.kind!r}")
    self.tx = losses.make_joint_optimizer(
      c.optim,
      int(c.num_steps),
      path_trainable=self.trainable,
      path_weight_decay=float(c.path.weight_decay),
      path_lr=float(c.path.lr),
      path_grad_clip=float(c.path.grad_clip),
    )
    if self.data.kind == "mi":
      self.x_eval, self.log_r_eval = self.data.x_eval, self.data.log_r_eval
    else:
      self.x_eval, self.log_r_eval = self.data.z_test, None
    probe = self.data.batch(np.random.default_rng([int(c.data.eval_seed), 7]), 4096)["x1"]
    self.second_moment = float(np.mean(np.sum(probe.astype(np.float64) ** 2, axis=1)))

  # -- state and update ------------------------------------------------------------------------
  def _score(self, net_params, x, t):
    return self.model.apply({"params": net_params}, x, t)

  def init_state(self, rng):
    c = self.config
    d = self.data.dim
    net = self.model.init(stream_key(rng, "init"), jnp.zeros((1, d)), jnp.zeros((1,)))
    phi = paths_lib.init_path_params(c.path.name, int(c.path.num_components))
    if c.path.name == "kmm" and c.path.training == "presolve_freeze":
      phi = analysis.optimize_path(
        phi,
        dim=d,
        m=self.second_moment,
        floor=float(c.loss.var_floor),
        constraint=c.path.constraint,
        num_steps=int(c.path.presolve_steps),
        learning_rate=float(c.path.presolve_lr),
        eps=float(c.path.eps),
      ).params
    params = {"net": net["params"], "path": phi}
    extras = {"ema": params} if c.ema_decay > 0 else {}
    if self._is_refresh:
      extras["is_path"] = phi  # φ of the importance-sampling grid, refreshed every is_refresh
    return TrainState.create(
      params=params, tx=self.tx, rng=rng, apply_fn=self._score, extras=extras
    )

  def update(self, state, batch):
    key = state.step_key()
    extras = dict(state.extras)
    if self._is_refresh:
      # Faithful stale grid: φ of the grid is the path at the last multiple of is_refresh.
      fresh = state.step % int(self.config.loss.is_refresh) == 0
      extras["is_path"] = jax.tree.map(
        lambda a, b: jnp.where(fresh, a, b), state.params["path"], extras["is_path"]
      )
    is_phi = extras.get("is_path")
    loss_fn = lambda p: losses.minpv_loss(
      self._score, p, batch, key, self.path_fn, self.settings, is_path_params=is_phi
    )
    (_, info), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
    new_state, grad_norm = state.apply_gradients(grads)
    if self.config.ema_decay > 0:
      # Warm-up decay min(d, (1 + n)/(10 + n)): the evaluated EMA forgets the random init within
      # a few hundred steps instead of carrying d^num_steps of it (0.999^3000 ≈ 0.05).
      extras["ema"] = optim_lib.ema_update(
        extras["ema"], new_state.params, float(self.config.ema_decay), count=new_state.step
      )
    new_state = new_state.replace(extras=extras)
    metrics = dict(info)
    metrics["train/grad_norm"] = grad_norm
    metrics.update(path_metrics(self.path_fn, new_state.params["path"]))
    return new_state, metrics

  def get_batch(self, step):
    c = self.config
    rng = np.random.default_rng([int(c.seed), int(step), 17])
    batch = self.data.batch(rng, int(c.batch_size))
    rows = shd.process_slice(int(c.batch_size))
    return {k: v[rows] for k, v in batch.items()}

  # -- evaluation ------------------------------------------------------------------------------
  @functools.cached_property
  def _log_ratio(self):
    c = self.config

    def fn(params, x, num_nodes, tol_scale):
      score = lambda xx, tt: self._score(params["net"], xx, tt)[0]
      return estimator.log_ratio(
        score,
        x,
        method=c.estimate.method,
        num_nodes=num_nodes,
        t_start=float(c.estimate.t_start),
        t_end=1.0 - float(c.path.eps),
        grid=c.estimate.grid,
        path_fn=self.path_fn,
        path_params=params["path"],
        rtol=float(c.estimate.rtol) * tol_scale,
        atol=float(c.estimate.atol) * tol_scale,
        max_steps=int(c.estimate.max_steps),
      )

    return jax.jit(fn, static_argnums=(2, 3))

  def log_ratio(self, params, x: np.ndarray, *, fine: bool = False) -> np.ndarray:
    """log r̂ (n,) float64 at x (n, d), in chunks of ``estimate.chunk`` rows (padded, one
    compile); ``fine`` uses gap_factor × nodes (dopri5: tolerances / 100)."""
    c = self.config
    nodes = int(c.estimate.nodes) * (int(c.estimate.gap_factor) if fine else 1)
    tol_scale = 0.01 if fine else 1.0
    n = x.shape[0]
    chunk = min(int(c.estimate.chunk), n)
    pad = (-n) % chunk
    xp = np.concatenate([x, np.zeros((pad, x.shape[1]), x.dtype)]) if pad else x
    out = [
      np.asarray(
        self._log_ratio(params, jnp.asarray(xp[i : i + chunk]), nodes, tol_scale), np.float64
      )
      for i in range(0, xp.shape[0], chunk)
    ]
    return np.concatenate(out)[:n]

  def evaluate(self, state):
    c = self.config
    params = state.extras["ema"] if c.ema_decay > 0 else state.params
    lr_hat = self.log_ratio(params, self.x_eval)
    lr_fine = self.log_ratio(params, self.x_eval, fine=True)
    if self.data.kind == "mi":
      truth = self.log_r_eval.astype(np.float64)
      mi_hat = float(np.mean(lr_hat))
      out = {
        "eval/mi_estimate": mi_hat,
        "eval/mi_true": self.data.mi,
        "eval/mi_sample_truth": float(np.mean(truth)),
        "eval/mae": abs(mi_hat - float(np.mean(truth))),
        "eval/log_ratio_rmse": float(np.sqrt(np.mean((lr_hat - truth) ** 2))),
        "eval/log_ratio_std": float(np.std(lr_hat)),
        "eval/quad_gap": float(np.mean(lr_fine)) - mi_hat,
      }
    else:
      nll = self.data.nll(lr_hat)
      out = {
        "eval/nll": nll,
        "eval/bpd": float(nll / (self.data.dim * np.log(2.0))),
        "eval/nll_baseline": self.data.nll(np.zeros_like(lr_hat)),
        "eval/quad_gap": nll - self.data.nll(lr_fine),
      }
      if self.data.nll_true is not None:
        out["eval/nll_true"] = self.data.nll_true
      if self.data.log_r_true is not None:
        out["eval/log_ratio_rmse"] = float(np.sqrt(np.mean((lr_hat - self.data.log_r_true) ** 2)))
    out.update({k: float(v) for k, v in path_metrics(self.path_fn, params["path"]).items()})
    out.update(self.path_diagnostics(params["path"]))
    return out

  def path_diagnostics(self, phi) -> dict:
    """``eval/path_J`` (J[α] = ∫ Var(c_t | ‖x1‖² = m) dt, floored, m = E‖x1‖²) and, on the
    Gaussian MI task, ``eval/band_fraction``: the share of training times whose α(t) lies in the
    α-band carrying 90 % of the MI (``analysis.mi_alpha_band``), with ``eval/band_alpha_lo|hi``.

    Training times are those of ``loss.time_sampler``: uniform on [eps, 1 − eps] (midpoint
    grid), lognorm (fixed draws) or the IS grid with its probabilities at the evaluated φ.
    """
    c = self.config
    out = {
      "eval/path_J": float(
        analysis.path_variance_integral(
          self.path_fn, phi, dim=self.data.dim, m=self.second_moment, floor=float(c.loss.var_floor)
        )
      )
    }
    if self.task is None or self.data.map is not None:
      return out
    band = analysis.mi_alpha_band(self.task)
    eps, n, weights = float(c.path.eps), 20_000, None
    sampler = c.loss.time_sampler
    if sampler == "uniform":
      t = eps + (1.0 - 2.0 * eps) * (np.arange(n) + 0.5) / n
    elif sampler == "lognorm":
      t = np.asarray(losses.sample_times(jax.random.PRNGKey(0), n, sampler="lognorm", eps=eps))
    else:
      b = self.get_batch(0)
      t, logp = losses.is_log_probs(
        self.path_fn, phi, self.settings, jnp.asarray(b["x0"]), jnp.asarray(b["x1"])
      )
      weights = np.exp(np.asarray(logp, np.float64))
    alpha = np.asarray(self.path_fn(phi, jnp.asarray(t, jnp.float32)).alpha)
    out.update(
      {
        "eval/band_fraction": analysis.band_fraction(alpha, band, weights),
        "eval/band_alpha_lo": band[0],
        "eval/band_alpha_hi": band[1],
      }
    )
    return out
