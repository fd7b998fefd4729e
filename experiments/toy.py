"""A minimal method: least-squares regression with a small Flax MLP.

It exists for two reasons: it is the template a new method package copies (config, Method
subclass, deterministic batches, evaluation), and it drives the core's tests with a known
answer: with ``hidden=()`` the model is linear and the trained weights must reach the
closed-form ordinary-least-squares solution of the fixed dataset.

Data: a fixed dataset of ``toy.num_examples`` points x ~ N(0, I_d), y = x·w* + b* + σ·ε,
generated from ``seed``; the batch of step s is ``batch_size`` rows drawn with
``np.random.default_rng([seed, s])``, so it depends on the step alone.

Both data paths of the ``Method`` protocol, with the same batches: by default ``get_batch`` builds
host arrays; with ``toy.data_on_device`` the dataset and the row indices of every step (drawn by
the same generator, ``(num_steps, batch_size)`` int32) stay on the devices and ``device_batch``
gathers the rows inside the jitted step, so the two paths train to the same parameters.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from iclr26_jax.core import config as config_lib
from iclr26_jax.core import optim
from iclr26_jax.core import sharding as shd
from iclr26_jax.core.train_state import TrainState, stream_key
from iclr26_jax.core.trainer import Method
from iclr26_jax.nn import mlp


def default_config() -> ml_collections.ConfigDict:
  c = config_lib.trainer_defaults()
  c.method = "toy_regression"
  c.num_steps = 2000
  c.batch_size = 256
  c.log_every = 200
  c.eval_every = 0
  c.checkpoint_every = 500
  c.optim = optim.optim_defaults()
  c.optim.learning_rate = 3e-2
  c.optim.schedule = "cosine"
  c.toy = ml_collections.ConfigDict()
  c.toy.dim = 8  # input dimension d
  c.toy.hidden = ()  # hidden widths; () = linear model (has a closed-form optimum)
  c.toy.num_examples = 4096  # size of the fixed dataset
  c.toy.noise = 0.1  # label noise σ
  c.toy.input_noise = 0.0  # std of Gaussian input jitter drawn from the step key (0 = off)
  c.toy.nan_at_step = -1  # fault injection for tests: the loss of this step is NaN
  # Fault injection for the preemption / dead-peer rehearsals (tests/faults/test_preemption.py):
  # when the host batch of step index `signal_at_step` is drawn (before update
  # signal_at_step + 1), process `signal_process` sends itself `signal_name` (SIGTERM, SIGINT or
  # SIGKILL); from then on every host batch waits `step_delay` s (a slow step, so that several
  # processes agree on a stop mid-run, as they would with accelerator-sized steps).
  c.toy.signal_at_step = -1
  c.toy.signal_name = "SIGTERM"
  c.toy.signal_process = 1
  c.toy.step_delay = 0.0
  c.toy.data_on_device = False  # True: the dataset stays on the devices (Method.device_data)
  return c


def validate(config: ml_collections.ConfigDict) -> None:
  """Range checks of the ``toy`` section (``ConfigError`` naming the dotted key)."""
  config_lib.positive(config, "toy.dim", "toy.hidden", "toy.num_examples")
  config_lib.nonneg(config, "toy.noise", "toy.input_noise", "toy.step_delay")
  if config.toy.signal_name not in ("SIGTERM", "SIGINT", "SIGKILL"):
    raise config_lib.ConfigError(
      f"config key 'toy.signal_name' must be SIGTERM, SIGINT or SIGKILL; got {config.toy.signal_name!r}"
    )


class MLP(nn.Module):
  """``(B, d) -> (B,)`` MLP with ReLU hidden layers."""

  hidden: Sequence[int]

  @nn.compact
  def __call__(self, x):
    return mlp(x, self.hidden, 1, activation=nn.relu)[..., 0]


def make_dataset(config: ml_collections.ConfigDict) -> tuple[np.ndarray, np.ndarray]:
  """The fixed dataset ``(x (N, d) float32, y (N,) float32)`` from ``config.seed``."""
  t = config.toy
  rng = np.random.default_rng([int(config.seed), 12345])
  w = rng.normal(size=(t.dim,))
  b = rng.normal()
  x = rng.normal(size=(t.num_examples, t.dim)).astype(np.float32)
  y = (x @ w + b + t.noise * rng.normal(size=(t.num_examples,))).astype(np.float32)
  return x, y


def ols_solution(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
  """Closed-form least squares ``(w (d,), b)`` in float64."""
  xa = np.concatenate([x.astype(np.float64), np.ones((x.shape[0], 1))], axis=1)
  sol, *_ = np.linalg.lstsq(xa, y.astype(np.float64), rcond=None)
  return sol[:-1], float(sol[-1])


class ToyRegression(Method):
  """Least-squares regression; ``update`` reports loss, grad_norm and the learning rate."""

  name = "toy_regression"

  def __init__(self, config):
    super().__init__(config)
    validate(config)
    self.model = MLP(tuple(config.toy.hidden))
    self.x, self.y = make_dataset(config)
    self.tx = optim.make_optimizer(config.optim, int(config.num_steps))

  def init_state(self, rng):
    params = self.model.init(stream_key(rng, "init"), jnp.zeros((1, self.config.toy.dim)))
    return TrainState.create(params=params, tx=self.tx, rng=rng, apply_fn=self.model.apply)

  def update(self, state, batch):
    nan_at = int(self.config.toy.nan_at_step)
    x = batch["x"]
    if self.config.toy.input_noise > 0:  # randomness from the step key: resumes reproduce it
      x = x + self.config.toy.input_noise * jax.random.normal(state.step_key(), x.shape)

    def loss_fn(params):
      pred = state.apply_fn(params, x)
      loss = jnp.mean((pred - batch["y"]) ** 2)
      if nan_at >= 0:
        loss = jnp.where(state.step == nan_at, jnp.nan, loss)
      return loss

    loss, grads = jax.value_and_grad(loss_fn)(state.params)
    state, grad_norm = state.apply_gradients(grads)
    return state, {"train/loss": loss, "train/grad_norm": grad_norm}

  def _indices(self, step: int) -> np.ndarray:
    """The dataset rows of the global batch of ``step``: ``(batch_size,)`` int."""
    rng = np.random.default_rng([int(self.config.seed), int(step)])
    return rng.integers(0, self.x.shape[0], size=int(self.config.batch_size))

  def get_batch(self, step):
    self._inject_fault(step)
    rows = self._indices(step)[shd.process_slice(int(self.config.batch_size))]
    return {"x": self.x[rows], "y": self.y[rows]}

  def _inject_fault(self, step: int) -> None:
    """``toy.signal_at_step`` and ``toy.step_delay`` (see ``default_config``)."""
    at = int(self.config.toy.signal_at_step)
    if at < 0 or step < at:
      return
    if (
      step == at
      and jax.process_index() == int(self.config.toy.signal_process) % jax.process_count()
    ):
      os.kill(os.getpid(), getattr(signal, str(self.config.toy.signal_name)))
    if self.config.toy.step_delay > 0:
      time.sleep(float(self.config.toy.step_delay))

  def device_data(self):
    """With ``toy.data_on_device``: ``x (N, d)``, ``y (N,)`` and ``idx (num_steps, B)`` int32."""
    if not self.config.toy.data_on_device:
      return None
    idx = np.stack([self._indices(s) for s in range(int(self.config.num_steps))])
    return {"x": self.x, "y": self.y, "idx": idx.astype(np.int32)}

  def device_batch(self, data, step):
    """The rows ``idx[step]``: ``{"x": (B, d), "y": (B,)}``, equal to ``get_batch(step)``."""
    rows = data["idx"][step]
    return {"x": data["x"][rows], "y": data["y"][rows]}

  def evaluate(self, state):
    pred = jax.jit(state.apply_fn)(state.params, self.x)
    out = {"eval/mse": float(jnp.mean((pred - self.y) ** 2))}
    if not self.config.toy.hidden:
      w, b = ols_solution(self.x, self.y)
      dense = jax.device_get(state.params["params"]["Dense_0"])
      err = np.concatenate([np.asarray(dense["kernel"])[:, 0] - w, np.asarray(dense["bias"]) - b])
      out["eval/ols_param_error"] = float(np.max(np.abs(err)))
    return out
