"""lmKAN through the shared trainer: regression (methane surrogate, random teacher) and digits.

One ``Method`` (`LMKANMethod`) covers the lmKAN models and their same-shape baselines (ReLU MLP,
ReLU CNN), so every comparison runs the same loop, data, schedule and evaluation. The Hessian
penalty weight λ(step) is computed inside the jitted update from the traced step (no recompiles);
BatchNorm statistics live in ``state.extras["batch_stats"]``. Every eval also reports the metrics
with BatchNorm in train mode (``_trainmode``), so a running-statistics mismatch is visible.

The logged ``train/``, ``eval/`` and ``model/`` keys: docs/methods/lmkan.md ("Configuration and
logged metrics").
"""

from __future__ import annotations

import functools
import time

import jax
import ml_collections
import jax.numpy as jnp
import numpy as np
import optax

from iclr26_jax.core import config as config_lib
from iclr26_jax.core import optim
from iclr26_jax.core import sharding as shd
from iclr26_jax.core.train_state import TrainState, seed_key, stream_key
from iclr26_jax.core.trainer import Method
from iclr26_jax.lmkan import data, flops, networks, regularizers

TASKS = {"methane": ("lmkan", "mlp"), "teacher": ("lmkan", "mlp"), "digits": ("lmkan_cnn", "cnn")}


def validate(config: ml_collections.ConfigDict) -> None:
  """Range checks of the ``lmkan`` section (``ConfigError`` naming the dotted key); the grid,
  task and model names are checked where they are used (``build_model``, ``SigmaGrid``)."""
  config_lib.positive(config, "lmkan.hidden", "lmkan.channels", "lmkan.dense_hidden")
  config_lib.positive(config, "lmkan.grid_size", "lmkan.test_size")
  config_lib.nonneg(config, "lmkan.init_scale", "lmkan.lambda0", "lmkan.lambda_decades")
  config_lib.fraction(config, "lmkan.bn_momentum", "lmkan.phase1_fraction")


def build_model(cfg):
  """The Flax module named by ``cfg.lmkan`` (output width from the task)."""
  lc = cfg.lmkan
  if lc.task not in TASKS:
    raise config_lib.ConfigError(
      f"config key 'lmkan.task' must be one of {sorted(TASKS)}; got {lc.task!r}"
    )
  if lc.model not in TASKS[lc.task]:
    raise config_lib.ConfigError(
      f"config key 'lmkan.model' must be one of {TASKS[lc.task]} for "
      f"task {lc.task!r}; got {lc.model!r}"
    )
  kw = dict(
    grid_size=lc.grid_size,
    table_init=lc.table_init,
    init_scale=lc.init_scale,
    impl=lc.impl,
    bn_momentum=lc.bn_momentum,
  )
  if lc.task == "digits":
    dense = tuple(lc.dense_hidden) + (10,)
    if lc.model == "cnn":
      return networks.CNN(tuple(lc.channels), dense)
    return networks.LMKANCNN(tuple(lc.channels), dense, **kw)
  # The library's builder (BatchNorm before every lmKAN layer, or the same-shape ReLU MLP).
  return networks.make_network(tuple(lc.hidden) + (1,), baseline=lc.model == "mlp", **kw)


def input_example(cfg) -> jax.ShapeDtypeStruct:
  """Per-sample input shape of the task, as a batch of one."""
  shape = {"methane": (1, 12), "teacher": (1, 32), "digits": (1, 8, 8, 1)}[cfg.lmkan.task]
  return jax.ShapeDtypeStruct(shape, jnp.float32)


class LMKANMethod(Method):
  """lmKAN / baseline training on one task (see module docstring)."""

  name = "lmkan"

  def __init__(self, config):
    super().__init__(config)
    self.model = build_model(config)
    self.is_lmkan = config.lmkan.model.startswith("lmkan")
    self.schedule = regularizers.two_phase_schedule(
      int(config.num_steps),
      config.lmkan.phase1_fraction,
      config.optim.learning_rate,
      config.lmkan.lambda0,
      config.lmkan.lambda_decades,
    )
    if config.optim.schedule == "two_phase":
      self.learning_rate = self.schedule.learning_rate
    else:
      self.learning_rate = optim.make_schedule(config.optim, int(config.num_steps))
    self.tx = optim.make_optimizer(config.optim, int(config.num_steps), schedule=self.learning_rate)
    task = config.lmkan.task
    self.teacher = (
      data.make_teacher(
        int(config.lmkan.teacher_seed),
        omega=float(config.lmkan.teacher_omega),
        activation=config.lmkan.teacher_activation,
      )
      if task == "teacher"
      else None
    )
    if task == "digits":
      self.x_train, self.y_train, self.x_test, self.y_test = data.load_digits(seed=int(config.seed))
    self.cost = flops.count_model(self.model, input_example(config))

  # -- data ---------------------------------------------------------------------------------
  def get_batch(self, step):
    """Digits (a finite training set): this process's rows of the batch of ``step``, on the host."""
    cfg = self.config
    n = int(cfg.batch_size)
    rows = shd.process_slice(n)
    idx = np.random.default_rng([int(cfg.seed), int(step)]).integers(0, len(self.y_train), n)
    return {"x": self.x_train[idx[rows]], "y": self.y_train[idx[rows]]}

  def device_data(self):
    """Regression (infinite-data regime, a fresh batch every step, drawn on the devices): the
    stream's root key ``seed_key(seed, "data/train")`` (raw ``uint32[2]``) and, for the teacher, its
    weights (``TeacherTask.weights``); digits use the host path (``None``)."""
    cfg = self.config
    if cfg.lmkan.task == "digits":
      return None
    out = {"key": seed_key(int(cfg.seed), "data/train")}
    if cfg.lmkan.task == "teacher":
      out["teacher"] = self.teacher.weights
    return out

  def device_batch(self, data_, step):
    """The regression batch of ``step`` (traced): ``{"x": (B, d_in), "y": (B, 1)}`` drawn with
    ``fold_in(key, step)`` (``data.methane_like_batch`` / ``data.teacher_batch``)."""
    n = int(self.config.batch_size)
    key = jax.random.fold_in(data_["key"], step)
    if self.config.lmkan.task == "methane":
      x, y = data.methane_like_batch(key, n)
    else:
      x, y = data.teacher_batch(self.teacher._replace(weights=data_["teacher"]), key, n)
    return {"x": x, "y": y}

  @functools.cached_property
  def test_set(self):
    cfg = self.config
    if cfg.lmkan.task == "digits":
      return self.x_test, self.y_test
    if cfg.lmkan.task == "methane":
      return data.methane_like_test_set(n=int(cfg.lmkan.test_size))
    return data.teacher_test_set(self.teacher, n=int(cfg.lmkan.test_size))

  # -- state and update ------------------------------------------------------------------------
  def init_state(self, rng):
    variables = self.model.init(
      stream_key(rng, "init"), jnp.zeros(input_example(self.config).shape), train=False
    )
    return TrainState.create(
      params=variables["params"],
      tx=self.tx,
      rng=rng,
      apply_fn=self.model.apply,
      extras={"batch_stats": variables.get("batch_stats", {})},
    )

  def _data_loss(self, out, y):
    if self.config.lmkan.task == "digits":
      return optax.softmax_cross_entropy_with_integer_labels(out, y).mean()
    return jnp.mean((out - y) ** 2)

  def update(self, state, batch):
    lam = self.schedule.hessian_lambda(state.step) if self.config.lmkan.hessian else jnp.zeros(())

    def loss_fn(params):
      out, mut = state.apply_fn(
        {"params": params, **state.extras},
        batch["x"],
        train=True,
        mutable=["batch_stats", "intermediates"],
      )
      data_loss = self._data_loss(out, batch["y"])
      pen = regularizers.hessian_penalty(params) if self.is_lmkan else jnp.zeros(())
      return data_loss + lam * pen, (data_loss, pen, mut)

    (loss, (data_loss, pen, mut)), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
    extras = {"batch_stats": mut.get("batch_stats", {})} if "batch_stats" in state.extras else {}
    state, grad_norm = state.apply_gradients(grads, extras=extras)
    metrics = {
      "train/loss": loss,
      "train/data_loss": data_loss,
      "train/grad_norm": grad_norm,
      "train/hessian_lambda": lam,
      "train/hessian_penalty": pen,
      "train/lr": self.learning_rate(state.step - 1),
    }
    fracs = jax.tree.leaves(mut.get("intermediates", {}))
    if fracs:
      metrics["lmkan/out_of_grid_frac"] = jnp.mean(jnp.stack([jnp.mean(f) for f in fracs]))
    return state, metrics

  # -- evaluation ------------------------------------------------------------------------------
  @functools.cached_property
  def _predict(self):
    return jax.jit(
      lambda params, extras, x: self.model.apply({"params": params, **extras}, x, train=False)
    )

  @functools.cached_property
  def _predict_trainmode(self):
    """Predictions with BatchNorm on the statistics of the evaluated batch itself (train mode)."""

    def f(params, extras, x):
      out, _ = self.model.apply(
        {"params": params, **extras}, x, train=True, mutable=["batch_stats", "intermediates"]
      )
      return out

    return jax.jit(f)

  def evaluate(self, state):
    """Test metrics in eval mode (BatchNorm running statistics, what inference uses) and, side by
    side with the ``_trainmode`` suffix, with BatchNorm on the statistics of the whole test set (the
    training distribution for the regression tasks): a large gap flags running statistics that do
    not describe the evaluated activations."""
    x, y = self.test_set
    xj = jnp.asarray(x)
    out = np.asarray(self._predict(state.params, state.extras, xj))
    # Inference wall time on this host: the best of 3 timed eval-mode forwards of the whole test set
    # (already compiled above), per sample. Noisy on a shared machine; a relative, not absolute, number.
    times = []
    for _ in range(3):
      t0 = time.perf_counter()
      jax.block_until_ready(self._predict(state.params, state.extras, xj))
      times.append(time.perf_counter() - t0)
    out_tm = np.asarray(self._predict_trainmode(state.params, state.extras, xj))
    metrics = {
      "model/flops_per_sample": float(self.cost.flops),
      "model/flops_overhead_per_sample": float(self.cost.overhead_flops),
      "model/transcendentals_per_sample": float(self.cost.overhead_transcendentals),
      "model/flops_total_per_sample": float(self.cost.total_flops),
      "model/params": float(self.cost.params),
      "model/infer_us_per_sample": 1e6 * min(times) / len(x),
    }
    if self.config.lmkan.task == "digits":
      metrics["eval/accuracy"] = float(np.mean(out.argmax(-1) == np.asarray(y)))
      metrics["eval/accuracy_trainmode"] = float(np.mean(out_tm.argmax(-1) == np.asarray(y)))
      # Accuracy on the (finite) training images, eval mode: the generalisation gap.
      out_tr = np.asarray(self._predict(state.params, state.extras, jnp.asarray(self.x_train)))
      metrics["eval/train_accuracy"] = float(np.mean(out_tr.argmax(-1) == np.asarray(self.y_train)))
    else:
      y = np.asarray(y, np.float64)
      mse_over_var = float(np.mean((out - y) ** 2) / np.var(y))
      metrics["eval/mse_over_var"] = mse_over_var
      metrics["eval/rmse_over_std"] = float(np.sqrt(mse_over_var))
      metrics["eval/mse_over_var_trainmode"] = float(np.mean((out_tm - y) ** 2) / np.var(y))
    return metrics
