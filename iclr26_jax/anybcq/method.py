"""AnyBCQ's tiny byte-level LM through the shared trainer (``core.trainer``, ``experiments.main``).

``AnyBCQLMMethod`` trains ``lm.TinyLM`` on the offline docstring corpus (``anybcq.corpus``) and
evaluates validation perplexity at full precision and, per ``config.quant``, after weight-only
quantization (Park et al., "AnyBCQ", ICLR 2026, arXiv 2510.10467; code
github.com/naver-aics/anybcq). Also ``default_config``, ``validate``, ``run_config`` and
``train_lm``. The configuration fields and logged metrics: docs/methods/anybcq.md
("Configuration and logged metrics").

  python -m experiments.main --config=experiments/configs/anybcq/lm.py --workdir=/tmp/anybcq_lm
"""

from __future__ import annotations

import tempfile
from typing import Callable

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from iclr26_jax.anybcq import corpus as corpus_lib
from iclr26_jax.anybcq import lm
from iclr26_jax.anybcq.quantizer import check_bits
from iclr26_jax.core import config as config_lib
from iclr26_jax.core import optim
from iclr26_jax.core import sharding as shd
from iclr26_jax.core.train_state import TrainState
from iclr26_jax.core import trainer
from iclr26_jax.core.trainer import Method

__all__ = [
  "AnyBCQLMMethod",
  "QUANT_EVAL",
  "default_config",
  "lm_config",
  "run_config",
  "train_lm",
  "validate",
]

QUANT_EVAL = ("final", "every", "never")
_LM_FIELDS = ("width", "depth", "heads", "mlp_ratio", "context")


def default_config() -> ml_collections.ConfigDict:
  """Trainer fields + ``optim`` + ``lm`` + ``data`` + ``quant`` (the laptop LM of the CLI)."""
  c = config_lib.trainer_defaults()
  c.method = "anybcq_lm"
  c.num_steps = 2000
  c.batch_size = 32
  c.log_every = 100
  c.eval_every = 0
  c.checkpoint_every = 500
  c.optim = optim.optim_defaults()
  c.optim.name = "adamw"
  c.optim.learning_rate = 3e-3
  c.optim.weight_decay = 0.01
  c.optim.schedule = "warmup_cosine"
  c.optim.warmup_steps = 100
  c.optim.grad_clip = 1.0
  c.lm = config_lib.from_dataclass(lm.LMConfig(), _LM_FIELDS)
  c.data = ml_collections.ConfigDict()
  c.data.train_modules = tuple(corpus_lib.TRAIN_MODULES)
  c.data.valid_modules = tuple(corpus_lib.VALID_MODULES)
  c.data.train_bytes = 0
  c.data.eval_windows = 0
  c.quant = ml_collections.ConfigDict()
  c.quant.methods = tuple(lm.METHODS)
  c.quant.bits = (2, 3, 4)
  c.quant.group_size = 128
  c.quant.rounds = 20
  c.quant.asymmetric = True
  c.quant.eval = "final"
  return c


def _err(key: str, msg: str) -> config_lib.ConfigError:
  return config_lib.ConfigError(f"config key '{key}' {msg}")


def _int(config, key: str, lo: int) -> int:
  node = config
  for part in key.split("."):
    node = node[part]
  if isinstance(node, bool) or not isinstance(node, (int, np.integer)) or node < lo:
    raise _err(key, f"must be an int >= {lo}; got {node!r}")
  return int(node)


def validate(config: ml_collections.ConfigDict) -> None:
  """Checks the method's sections (the trainer checks its own fields).

  Raises:
    ConfigError: naming the first bad key.
  """
  config_lib.require(
    config,
    "optim",
    *(f"lm.{f}" for f in _LM_FIELDS),
    "data.train_modules",
    "data.valid_modules",
    "data.train_bytes",
    "data.eval_windows",
    "quant.methods",
    "quant.bits",
    "quant.group_size",
    "quant.rounds",
    "quant.asymmetric",
    "quant.eval",
  )
  for f in _LM_FIELDS:
    _int(config, f"lm.{f}", 1)
  if config.lm.width % config.lm.heads:
    raise _err("lm.width", f"= {config.lm.width} must be divisible by lm.heads = {config.lm.heads}")
  _int(config, "data.train_bytes", 0)
  _int(config, "data.eval_windows", 0)
  if 0 < config.data.train_bytes <= config.lm.context + 1:
    raise _err(
      "data.train_bytes",
      f"= {config.data.train_bytes} must exceed lm.context + 1 = "
      f"{config.lm.context + 1} (or be 0: the whole training stream)",
    )
  q = config.quant
  methods = tuple(q.methods)
  if not methods or len(set(methods)) != len(methods) or not set(methods) <= set(lm.METHODS):
    raise _err("quant.methods", f"must be distinct names from {lm.METHODS}; got {methods!r}")
  try:
    check_bits(tuple(q.bits))
  except ValueError as e:
    raise _err("quant.bits", str(e)) from None
  _int(config, "quant.group_size", 1)
  _int(config, "quant.rounds", 0)
  if not isinstance(q.asymmetric, bool):
    raise _err("quant.asymmetric", f"must be a bool; got {q.asymmetric!r}")
  if q.eval not in QUANT_EVAL:
    raise _err("quant.eval", f"must be one of {QUANT_EVAL}; got {q.eval!r}")
  try:
    optim.make_optimizer(config.optim, int(config.num_steps))
  except ValueError as e:
    raise config_lib.ConfigError(f"config section 'optim': {e}") from None


def lm_config(config: ml_collections.ConfigDict) -> lm.LMConfig:
  """The ``lm.LMConfig`` of ``config.lm`` (byte vocabulary)."""
  return config_lib.to_dataclass(lm.LMConfig, config.lm, "lm")


def run_config(
  cfg: lm.LMConfig = lm.LMConfig(),
  *,
  steps: int = 2000,
  batch: int = 32,
  lr: float = 3e-3,
  weight_decay: float = 0.01,
  seed: int = 0,
  log_every: int = 0,
  quant_eval: str = "never",
  group_size: int = 128,
  rounds: int = 20,
  asymmetric: bool = True,
  progress_bar: bool = False,
) -> ml_collections.ConfigDict:
  """The locked run config of ``train_lm`` and ``experiments.anybcq_lm`` (their arguments).

  Warm-up: ``max(1, min(100, steps // 10))`` steps, then cosine decay to 0 at ``steps``;
  ``log_every = 0`` logs every ``max(1, steps // 10)`` steps; one checkpoint, at the end.
  """
  if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
    raise ValueError(f"steps must be a positive int; got {steps!r}")
  c = default_config()
  c.seed = int(seed)
  c.num_steps = steps
  c.batch_size = int(batch)
  c.log_every = int(log_every) or max(1, steps // 10)
  c.checkpoint_every = steps
  c.keep_checkpoints = 1
  c.progress_bar = bool(progress_bar)
  c.optim.learning_rate = float(lr)
  c.optim.weight_decay = float(weight_decay)
  c.optim.warmup_steps = max(1, min(100, steps // 10))
  c.lm.update(config_lib.from_dataclass(cfg, _LM_FIELDS))
  if cfg.vocab != corpus_lib.VOCAB_SIZE:
    raise ValueError(
      f"the corpus is bytes: LMConfig.vocab must be {corpus_lib.VOCAB_SIZE}; got {cfg.vocab}"
    )
  c.quant.group_size = int(group_size)
  c.quant.rounds = int(rounds)
  c.quant.asymmetric = bool(asymmetric)
  c.quant.eval = quant_eval
  c.lock()
  return c


class AnyBCQLMMethod(Method):
  """``TinyLM`` trained on random corpus windows; perplexity at FP and after quantization.

  Args:
    config: the locked run config (``default_config()`` shape); validated here.
    train_stream: optional token stream ``(n,)`` replacing the corpus' training bytes
      (``train_lm`` passes its argument; a run of ``experiments.main`` always reads
      ``config.data``).
    valid_windows: optional ``(n, context + 1)`` int windows replacing the corpus' validation
      windows.
  Attributes:
    progress: optional ``progress(message)`` called before each quantization method in
      ``evaluate`` (the CLI prints it).
  """

  name = "anybcq_lm"

  def __init__(self, config: ml_collections.ConfigDict, train_stream=None, valid_windows=None):
    super().__init__(config)
    validate(config)
    self.cfg = lm_config(config)
    self.progress: Callable[[str], None] | None = None
    d = config.data
    corp = None
    if train_stream is None or valid_windows is None:
      try:
        corp = corpus_lib.load_corpus(tuple(d.train_modules), tuple(d.valid_modules))
      except (ImportError, ValueError) as e:
        raise _err("data", str(e)) from None
    stream = np.asarray(corp.train_bytes() if train_stream is None else train_stream)
    if stream.ndim != 1 or not np.issubdtype(stream.dtype, np.integer):
      raise ValueError(
        f"train_stream must be a 1-D integer array; got {stream.dtype} {stream.shape}"
      )
    if d.train_bytes:
      stream = stream[: int(d.train_bytes)]
    if stream.size <= self.cfg.context + 1:
      raise _err(
        "data",
        f"gives a training stream of {stream.size} tokens; need more than "
        f"lm.context + 1 = {self.cfg.context + 1}",
      )
    self.train = stream.astype(np.int32)
    if valid_windows is None:
      valid_windows = lm.eval_windows(corp.valid_bytes(), self.cfg.context)
    valid = np.asarray(valid_windows)
    if d.eval_windows:
      valid = valid[: int(d.eval_windows)]
    self.valid = np.asarray(lm.check_tokens(valid, self.cfg))  # (n, L) int32, L <= context + 1
    self.tx = optim.make_optimizer(config.optim, int(config.num_steps))

  def init_state(self, rng):
    # The root key itself initialises the model, so the parameters equal lm.init_lm(cfg, seed).
    params = lm.TinyLM(self.cfg).init(rng, jnp.zeros((1, self.cfg.context), jnp.int32))
    return TrainState.create(params=params, tx=self.tx, rng=rng)

  def update(self, state, batch):
    """One AdamW step on the mean next-byte NLL of ``batch["tokens"]`` ``(B, context + 1)``."""
    loss, grads = jax.value_and_grad(lambda p: lm._mean_nll(self.cfg, p, batch["tokens"]))(
      state.params
    )
    state, grad_norm = state.apply_gradients(grads)
    return state, {"train/loss": loss, "train/grad_norm": grad_norm}

  def window_starts(self, step: int) -> np.ndarray:
    """Start offsets ``(batch_size,)`` of the global batch of ``step`` in the training stream."""
    rng = np.random.default_rng([int(self.config.seed), int(step)])
    return rng.integers(0, self.train.size - self.cfg.context - 1, size=int(self.config.batch_size))

  def get_batch(self, step):
    """This process's rows: ``{"tokens": (B_local, context + 1) int32}``."""
    starts = self.window_starts(step)[shd.process_slice(int(self.config.batch_size))]
    return {"tokens": self.train[starts[:, None] + np.arange(self.cfg.context + 1)[None, :]]}

  def evaluate(self, state):
    """``eval/ppl_fp``; with quantization due, ``eval/ppl_<method>_<bits>`` for every pair."""
    params = jax.device_get(state.params)
    out = {"eval/ppl_fp": lm.perplexity(params, self.valid, self.cfg)}
    q = self.config.quant
    final = int(jax.device_get(state.step)) >= int(self.config.num_steps)
    if q.eval == "every" or (q.eval == "final" and final):
      bits = tuple(int(b) for b in q.bits)
      for m in q.methods:
        if self.progress is not None:
          self.progress(
            f"{m}: quantizing the block linears to {'/'.join(map(str, bits))} bits and evaluating"
          )
        trees = lm.quantize_lm(
          params, m, bits, int(q.group_size), int(q.rounds), bool(q.asymmetric), self.cfg
        )
        for p in bits:
          out[f"eval/ppl_{m}_{p}"] = lm.perplexity(trees[p], self.valid, self.cfg)
    return out


def train_lm(
  train_stream,
  cfg: lm.LMConfig = lm.LMConfig(),
  steps: int = 2000,
  batch: int = 32,
  lr: float = 3e-3,
  weight_decay: float = 0.01,
  seed: int = 0,
  log_every: int = 0,
  *,
  workdir: str | None = None,
  valid_windows=None,
):
  """Trains ``TinyLM(cfg)`` through the shared trainer (``AnyBCQLMMethod``).

  The run is ``run_config``'s (AdamW, warm-up cosine, clipping at 1; the batch of step s is drawn
  by ``np.random.default_rng([seed, s])``); its end evaluates the FP perplexity only.

  Args:
    train_stream: token ids ``(n,)``, n > context + 1.
    cfg, steps, batch, lr, weight_decay, seed: the model and the run.
    log_every: steps between logged training losses (0: ``max(1, steps // 10)``).
    workdir: run directory (checkpoint, ``metrics.jsonl``, ``config.json``); the same call on
      the same workdir resumes or returns the finished run. Default: a temporary directory,
      removed afterwards.
    valid_windows: ``(n, L)`` validation windows for the run's ``eval/ppl_fp`` (default: the
      corpus' validation bytes).
  Returns:
    ``(params, losses)``: final parameters and the training NLL (nats/byte) at every logged step
    (every ``log_every``-th step and the last), ``(ceil(steps / log_every),)`` float32.
  """
  config = run_config(
    cfg, steps=steps, batch=batch, lr=lr, weight_decay=weight_decay, seed=seed, log_every=log_every
  )
  method = AnyBCQLMMethod(config, train_stream=train_stream, valid_windows=valid_windows)

  def run(wd):
    result = trainer.train(method, config, wd)
    losses = np.asarray([r["train/loss"] for r in result.history if "train/loss" in r], np.float32)
    return jax.device_get(result.state.params), losses

  if workdir is not None:
    return run(workdir)
  with tempfile.TemporaryDirectory(prefix="anybcq_lm_") as wd:
    return run(wd)
