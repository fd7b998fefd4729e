"""The QAM entry point: train an agent on an offline dataset of your own.

QAM, Q-learning with Adjoint Matching (Qiyang Li and Sergey Levine, ICLR 2026); reference JAX
code github.com/ColinQiyangLi/qam.

``train_offline`` checks a dict of per-transition arrays (``check_dataset`` gives the layout),
builds a ``QAMAgent`` from ``make_agent_config(config)`` and returns an ``OfflineAgent`` whose
``sample_actions(obs, key)`` gives action chunks ``(B, H, d)``. ``auto_reward_scale`` and
``returns_to_go`` give the default reward scale. Usage: docs/methods/qam.md ("Use it on your own
problem").
"""

from __future__ import annotations

import difflib
import math
import sys
import time
from typing import Any, Mapping

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from iclr26_jax.core import config as core_config
from iclr26_jax.core.loop import run_chunks
from iclr26_jax.core.train_state import stream_key
from iclr26_jax.qam import config as qam_config
from iclr26_jax.qam import datasets
from iclr26_jax.qam.agent import QAMAgent

__all__ = ["OfflineAgent", "make_agent_config", "check_dataset", "train_offline"]

_FLOAT_2D = ("observations", "actions")
_REQUIRED = ("observations", "actions", "rewards", "terminals")
_OPTIONAL = ("next_observations", "masks")


def _suggest(name: str, valid) -> str:
  close = difflib.get_close_matches(name, list(valid), n=1)
  return f" (did you mean {close[0]!r}?)" if close else ""


def make_agent_config(config: Mapping[str, Any] | None = None) -> ml_collections.ConfigDict:
  """``qam.config.agent_defaults()`` with the fields of ``config`` replaced, locked.

  Args:
    config: a dict of agent fields (nested dicts or dotted keys for ``optim``, e.g.
      ``{"optim": {"learning_rate": 1e-3}}`` or ``{"optim.learning_rate": 1e-3}``), or None.

  Returns:
    The merged, validated, locked ``ConfigDict``.

  Raises:
    ValueError (``core.config.ConfigError``): a field that does not exist (named, with the
      closest valid field), a value of the wrong type, or one out of range.
  """
  c = qam_config.agent_defaults()
  if config is None:
    config = {}
  if not isinstance(config, Mapping):
    raise core_config.ConfigError(
      f"config must be a dict of agent fields (qam.config.agent_defaults()); got "
      f"{type(config).__name__}"
    )
  flat = {}

  def walk(prefix, d):
    for k, v in d.items():
      if not isinstance(k, str):
        raise core_config.ConfigError(f"config keys must be strings; got {k!r}")
      key = prefix + k
      if isinstance(v, Mapping):
        walk(key + ".", v)
      else:
        flat[key] = v

  walk("", config)
  for key, value in flat.items():
    node = c
    parts = key.split(".")
    for i, part in enumerate(parts):
      if not isinstance(node, ml_collections.ConfigDict) or part not in node:
        where = ".".join(parts[:i])
        fields = list(node.keys()) if isinstance(node, ml_collections.ConfigDict) else []
        raise core_config.ConfigError(
          f"unknown QAM config key {key!r}{_suggest(part, fields)}; "
          f"{'fields of ' + repr(where) if where else 'agent fields'}: {sorted(fields)}"
        )
      if i < len(parts) - 1:
        node = node[part]
    old = node[parts[-1]]
    if isinstance(old, ml_collections.ConfigDict):
      raise core_config.ConfigError(
        f"QAM config key {key!r} is a section; set its fields ({sorted(old.keys())})"
      )
    if isinstance(old, tuple) and isinstance(value, list):
      value = tuple(value)
    try:
      node[parts[-1]] = value
    except TypeError as e:
      raise core_config.ConfigError(
        f"QAM config key {key!r}: got {value!r} ({type(value).__name__}); the field is "
        f"{old!r} ({type(old).__name__}): {e}"
      ) from None
  qam_config.validate(c)
  c.lock()
  return c


def _host(name: str, value) -> np.ndarray:
  """The dataset entry as a NumPy array (no dtype conversion)."""
  if isinstance(value, jax.Array) or hasattr(value, "__array__"):
    return np.asarray(value)
  if isinstance(value, (list, tuple)):
    return np.asarray(value)
  raise ValueError(f"dataset[{name!r}] must be an array; got {type(value).__name__}")


def check_dataset(dataset: Mapping[str, Any], horizon: int = 1) -> dict[str, np.ndarray]:
  """The checks on entry, and the dataset in the layout ``datasets.sample_chunks`` reads.

  Args:
    dataset: dict with ``observations (N, S)``, ``actions (N, d)``, ``rewards (N,)``,
      ``terminals (N,)`` and optionally ``masks (N,)``, ``next_observations (N, S)``;
      observations, actions, rewards and next observations of a floating dtype (no value is
      ever cast from an integer or truncated); terminals and masks 0 / 1 (bool, integer or
      float); every value finite; actions in [-1, 1]; other keys are ignored. ``terminals`` is 1
      on each episode's last row; ``masks`` (0 where the return does not bootstrap) defaults to
      1 - terminals, ``next_observations`` to the next row's observation (the row's own on an
      episode's last row).
    horizon: H, the action-chunk length: at least one window of H transitions must stay inside
      an episode.

  Returns:
    float32 arrays ``observations``, ``actions``, ``rewards``, ``masks``, ``terminals``,
    ``next_observations``.

  Raises:
    ValueError: naming the key, what it got and what it needs.
  """
  if not isinstance(dataset, Mapping):
    raise ValueError(f"dataset must be a dict of arrays; got {type(dataset).__name__}")
  missing = [k for k in _REQUIRED if k not in dataset]
  if missing:
    hints = "".join(
      f"; {m!r} missing{_suggest(m, [k for k in dataset if isinstance(k, str)])}" for m in missing
    )
    raise ValueError(
      f"dataset must contain {list(_REQUIRED)} (optional {list(_OPTIONAL)}); got keys "
      f"{sorted(map(str, dataset))}{hints}"
    )
  arrs = {k: _host(k, dataset[k]) for k in _REQUIRED + _OPTIONAL if k in dataset}
  obs = arrs["observations"]
  if obs.ndim != 2:
    raise ValueError(
      f"dataset['observations'] must have shape (N, obs_dim); got {obs.shape}"
      + (" (a 1-D array: reshape to (N, 1) for scalar observations)" if obs.ndim == 1 else "")
    )
  n = obs.shape[0]
  if n == 0:
    raise ValueError("dataset['observations'] is empty (N = 0); need at least one transition")
  want = {
    "observations": (n, obs.shape[1]),
    "next_observations": (n, obs.shape[1]),
    "actions": (n, None),
    "rewards": (n,),
    "terminals": (n,),
    "masks": (n,),
  }
  for k, a in arrs.items():
    shape = want[k]
    ok = a.ndim == len(shape) and all(w is None or w == s for w, s in zip(shape, a.shape))
    if not ok:
      need = (
        "("
        + ", ".join("act_dim" if w is None else str(w) for w in shape)
        + ("," if len(shape) == 1 else "")
        + ")"
      )
      raise ValueError(
        f"dataset[{k!r}] must have shape {need} (N = {n} rows, as observations); got {a.shape}"
      )
  if arrs["actions"].shape[1] == 0 or obs.shape[1] == 0:
    raise ValueError(
      f"observations and actions need at least one column; got {obs.shape}, {arrs['actions'].shape}"
    )
  for k, a in arrs.items():
    if k in ("terminals", "masks"):
      if not (a.dtype == np.bool_ or np.issubdtype(a.dtype, np.number)):
        raise ValueError(f"dataset[{k!r}] must be bool or numeric 0 / 1; got dtype {a.dtype}")
      vals = a.astype(np.float64)
      if not np.all(np.isfinite(vals)) or not np.all((vals == 0) | (vals == 1)):
        bad = np.unique(vals[~((vals == 0) | (vals == 1))])[:5]
        raise ValueError(f"dataset[{k!r}] must hold only 0 and 1; got values {bad.tolist()}")
    else:
      if not (np.issubdtype(a.dtype, np.floating) or a.dtype == jnp.bfloat16):
        raise ValueError(
          f"dataset[{k!r}] must have a floating dtype (float32, float64, float16, bfloat16); "
          f"got {a.dtype}. Convert it yourself (e.g. .astype(np.float32)) so that no value is "
          "cast silently"
        )
      bad = ~np.isfinite(a.astype(np.float64))
      if bad.any():
        row = int(np.argwhere(bad)[0][0])
        raise ValueError(
          f"dataset[{k!r}] must be finite; got {int(bad.sum())} non-finite values (first in "
          f"row {row})"
        )
  act = arrs["actions"].astype(np.float64)
  if act.min() < -1.0 or act.max() > 1.0:
    raise ValueError(
      f"dataset['actions'] must lie in [-1, 1] (the policy's action box: sample_actions clips "
      f"to it); got min {act.min():.4g}, max {act.max():.4g}. Rescale the actions"
    )
  f32 = lambda a: np.asarray(a, np.float32)
  term = f32(arrs["terminals"])
  out = {
    "observations": f32(obs),
    "actions": f32(arrs["actions"]),
    "rewards": f32(arrs["rewards"]),
    "terminals": term,
    "masks": f32(arrs["masks"]) if "masks" in arrs else 1.0 - term,
  }
  if "next_observations" in arrs:
    out["next_observations"] = f32(arrs["next_observations"])
  else:
    nxt = np.concatenate([out["observations"][1:], out["observations"][-1:]], 0)
    last = term > 0
    nxt[last] = out["observations"][last]
    out["next_observations"] = nxt
  horizon = int(horizon)
  if n < horizon:
    raise ValueError(
      f"the dataset has N = {n} transitions, fewer than the action-chunk length horizon = "
      f"{horizon} (config['horizon'])"
    )
  if horizon > 1:
    # A window t..t+H-1 is a valid chunk unless a terminal lies among t..t+H-2.
    inner = np.convolve(term[:-1], np.ones(horizon - 1), "valid") if n > 1 else np.zeros(0)
    if not np.any(inner[: n - horizon + 1] == 0):
      raise ValueError(
        f"no window of horizon = {horizon} transitions stays inside one episode (dataset"
        "['terminals'] ends an episode too often): every chunk would be masked out. Use a "
        "smaller config['horizon'] (1 for a one-step task)"
      )
  return out


class OfflineAgent:
  """A trained QAM agent (``train_offline``).

  Attributes:
    agent: the ``QAMAgent`` (its ``state.params``, ``config`` with the resolved loop layout).
    history: one dict per logging block: ``step`` and the last update's diagnostics
      (``critic/loss``, ``bc/fm_loss``, ``actor/am_loss``, ``grad_norm``, ...).
    obs_dim, action_dim, horizon: S, d, H.
  """

  def __init__(self, agent: QAMAgent, history: list, reward_scale: float = 1.0):
    self.agent = agent
    self.history = history
    self.reward_scale = float(reward_scale)
    self.obs_dim = agent.obs_dim
    self.action_dim = agent.action_dim
    self.horizon = int(agent.config.horizon)

  def sample_actions(self, obs: jax.Array, key: jax.Array) -> jax.Array:
    """Action chunks of the trained policy.

    Args:
      obs: ``(B, S)`` floating observations (or one ``(S,)`` observation).
      key: PRNG key.

    Returns:
      ``(B, H, d)`` chunks in [-1, 1] (``(H, d)`` for one observation); execute them open-loop.
    """
    obs = jnp.asarray(obs)
    if not jnp.issubdtype(obs.dtype, jnp.floating):
      raise ValueError(f"obs must have a floating dtype; got {obs.dtype}")
    single = obs.ndim == 1
    if single:
      obs = obs[None]
    if obs.ndim != 2 or obs.shape[1] != self.obs_dim:
      raise ValueError(
        f"obs must have shape (B, {self.obs_dim}) or ({self.obs_dim},); got {obs.shape}"
      )
    a = self.agent.sample_actions(obs.astype(jnp.float32), _raw_key(key))
    return a[0] if single else a

  def __repr__(self) -> str:
    c = self.agent.config
    return (
      f"OfflineAgent({c.agent_name}, obs_dim={self.obs_dim}, action_dim={self.action_dim}, "
      f"horizon={self.horizon}, steps={int(self.agent.state.step)})"
    )


def _raw_key(key) -> jax.Array:
  if isinstance(key, jax.Array) and jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
    return jax.random.key_data(key)
  key = jnp.asarray(key)
  if key.shape != (2,) or key.dtype != jnp.uint32:
    raise ValueError(f"key must be a PRNG key (jax.random.key / PRNGKey); got {key!r}")
  return key


def _progress(num_updates: int, progress):
  """A tqdm bar on a terminal, else a line per block on stderr; nothing when progress=False."""
  if progress is False:
    return None
  if progress is None:
    progress = True
  try:
    tty = sys.stderr.isatty()
  except (AttributeError, ValueError):
    tty = False
  if tty:
    from tqdm.auto import tqdm

    return tqdm(total=num_updates, desc="QAM", unit="upd", file=sys.stderr)
  return "lines"


# A network preset sized for a laptop CPU (``train_offline(..., config=qam.CPU_CONFIG)``): the
# paper's structure (chunks of H = 5, a critic ensemble, N = 10 flow steps, lambda = 0.3) with
# 2 x 128 networks and K = 2 critics instead of 4 x 512 and K = 10.
CPU_CONFIG = {
  "actor_hidden_dims": (128, 128),
  "critic_hidden_dims": (128, 128),
  "num_qs": 2,
}


def returns_to_go(dataset: Mapping[str, np.ndarray], discount: float) -> np.ndarray:
  """Discounted returns-to-go of the dataset's own trajectories, ``(N,)``.

  ``G_t = r_t + discount * m_t * G_{t+1}`` inside an episode; at an episode's last row
  (``terminals``) ``G_t = r_t``: a time-out (``masks`` 1 there) is cut, since its value beyond
  the data is unknown. ``dataset`` is ``check_dataset``'s output.
  """
  r = np.asarray(dataset["rewards"], np.float64)
  term = np.asarray(dataset["terminals"]) > 0
  mask = np.asarray(dataset["masks"], np.float64)
  g = np.empty_like(r)
  nxt = 0.0
  for t in range(r.shape[0] - 1, -1, -1):
    nxt = r[t] if (term[t] or t == r.shape[0] - 1) else r[t] + discount * mask[t] * nxt
    g[t] = nxt
  return g


def auto_reward_scale(dataset: Mapping[str, Any], discount: float = 0.99) -> float:
  """The factor ``train_offline(reward_scale="auto")`` multiplies the rewards by.

  ``c = (1 / (1 - discount)) / (max G - min G)`` over the returns-to-go ``G`` of the data
  (``returns_to_go``): the rescaled returns span ``1 / (1 - discount)``, as those of a reward in
  [-1, 0] per step, the OGBench regime in which the paper set lambda (``inv_temp``); adding a
  constant to the rewards changes nothing but Q's offset. 1.0 when the returns are all equal.

  Args:
    dataset: dict of arrays as ``train_offline`` takes it (checked by ``check_dataset``).
    discount: gamma in (0, 1).

  Returns:
    the positive factor c (a Python float).

  Examples:
    >>> import numpy as np
    >>> from iclr26_jax import qam
    >>> data = {"observations": np.zeros((4, 1), np.float32),
    ...         "actions": np.zeros((4, 1), np.float32),
    ...         "rewards": np.array([0, 0, 1, 0], np.float32),  # two episodes of two steps
    ...         "terminals": np.array([0, 1, 0, 1], np.float32)}
    >>> qam.returns_to_go(qam.check_dataset(data), 0.5).tolist()
    [0.0, 0.0, 1.0, 0.0]
    >>> qam.auto_reward_scale(data, discount=0.5)  # returns span 1 -> span 1 / (1 - 0.5) = 2
    2.0
  """
  return _reward_scale(check_dataset(dataset), discount)


def _reward_scale(data: Mapping[str, np.ndarray], discount: float) -> float:
  """``auto_reward_scale`` of a dataset ``check_dataset`` has already checked."""
  discount = float(discount)
  if not 0.0 < discount < 1.0:
    raise ValueError(f"discount must lie in (0, 1); got {discount}")
  g = returns_to_go(data, discount)
  span = float(g.max() - g.min())
  if not span > 0.0:
    return 1.0
  return float((1.0 / (1.0 - discount)) / span)


def train_offline(
  dataset: Mapping[str, Any],
  *,
  key: jax.Array,
  num_updates: int,
  config: Mapping[str, Any] | None = None,
  batch_size: int = 256,
  reward_scale: float | str = "auto",
  log_every: int | None = None,
  progress: bool | None = None,
) -> OfflineAgent:
  """Trains QAM (or the BC-flow / FQL baselines, ``config["agent_name"]``) on an offline dataset.

  Each update draws ``batch_size`` chunks of ``horizon`` consecutive transitions uniformly from
  the data (kept on the device) and takes one agent update. Every ``log_every`` updates the last
  diagnostics are recorded in ``history`` and shown (tqdm on a terminal, else a line on stderr).

  Args:
    dataset: dict of arrays (see ``check_dataset``): ``observations (N, S)``, ``actions (N, d)``
      in [-1, 1], ``rewards (N,)``, ``terminals (N,)``; optional ``masks (N,)``,
      ``next_observations (N, S)``.
    key: PRNG key (initialisation, batches, the agent's noise).
    num_updates: number of updates (also the learning-rate schedule's length).
    config: agent fields replacing ``qam.config.agent_defaults()``'s (the paper's settings),
      e.g. ``{"horizon": 1, "num_qs": 2, "optim": {"learning_rate": 1e-3}}``; a misspelt key
      raises. ``CPU_CONFIG`` is a preset for a CPU.
    batch_size: chunks per update.
    reward_scale: the factor the rewards are multiplied by before training. ``"auto"`` (the
      default) is ``auto_reward_scale(dataset, discount)``, so that the default tilt works for
      rewards of any scale and sign. A positive number scales the rewards by it (1.0: as they
      are); then lambda must match the scale of your Q-values (the tilt is
      ``pi_beta * exp(lambda * Q)``). The factor used is ``OfflineAgent.reward_scale``; the
      critic's Q-values are in rescaled units.
    log_every: updates per logged block (default: num_updates // 10, at most 1000).
    progress: False for silence; default a bar / lines as above.

  Returns:
    ``OfflineAgent`` with ``sample_actions(obs (B, S), key) -> (B, H, d)``, ``agent`` and
    ``history``.

  Raises:
    ValueError: a bad dataset (the key, what it got and what it needs), an unknown config key
      (named, with the closest valid key) or a bad value.
    FloatingPointError: a loss or diagnostic became NaN / inf (``core.loop.NonFiniteLossError``,
      naming the update and the key).
    KeyboardInterrupt: Ctrl-C, within about a second.

  Examples:
    >>> import jax, numpy as np
    >>> from iclr26_jax import qam
    >>> rng = np.random.default_rng(0)
    >>> obs = rng.uniform(-1, 1, (512, 3)).astype(np.float32)
    >>> act = rng.uniform(-1, 1, (512, 2)).astype(np.float32)
    >>> data = {"observations": obs, "actions": act, "rewards": -np.abs(act).sum(1),
    ...         "terminals": np.ones(512, np.float32)}  # one-step episodes
    >>> agent = qam.train_offline(data, key=jax.random.key(0), num_updates=20, progress=False,
    ...     batch_size=64, config={"horizon": 1, "num_qs": 2, "actor_hidden_dims": (32,),
    ...                            "critic_hidden_dims": (32,), "flow_steps": 4})
    >>> chunks = agent.sample_actions(obs[:5], jax.random.key(1))
    >>> chunks.shape, bool((abs(chunks) <= 1).all())
    ((5, 1, 2), True)
    >>> qam.train_offline(data, key=jax.random.key(0), num_updates=1, config={"horizn": 1})
    Traceback (most recent call last):
    ...
    iclr26_jax.core.config.ConfigError: unknown QAM config key 'horizn' (did you mean 'horizon'?)...
  """
  cfg = make_agent_config(config)
  if isinstance(num_updates, bool) or int(num_updates) != num_updates or int(num_updates) < 1:
    raise ValueError(f"num_updates must be a positive integer; got {num_updates!r}")
  num_updates = int(num_updates)
  if isinstance(batch_size, bool) or int(batch_size) != batch_size or int(batch_size) < 1:
    raise ValueError(f"batch_size must be a positive integer; got {batch_size!r}")
  batch_size = int(batch_size)
  horizon = int(cfg.horizon)
  data = check_dataset(dataset, horizon)
  if isinstance(reward_scale, str):
    if reward_scale != "auto":
      raise ValueError(f"reward_scale must be 'auto' or a positive number; got {reward_scale!r}")
    scale = _reward_scale(data, float(cfg.discount))  # data is checked already
  else:
    scale = float(reward_scale)
    if isinstance(reward_scale, bool) or not (math.isfinite(scale) and scale > 0.0):
      raise ValueError(f"reward_scale must be 'auto' or a positive number; got {reward_scale!r}")
  data = dict(data, rewards=(data["rewards"] * scale).astype(np.float32))
  if log_every is None:
    log_every = max(1, min(1000, num_updates // 10))
  if isinstance(log_every, bool) or int(log_every) < 1:
    raise ValueError(f"log_every must be a positive integer; got {log_every!r}")
  log_every = min(int(log_every), num_updates)
  with cfg.unlocked():
    cfg.num_updates = num_updates
  root = _raw_key(key)
  agent = QAMAgent.create(
    stream_key(root, "qam/init"), data["observations"][:2], data["actions"][:2], cfg
  )
  dev = {k: jnp.asarray(v) for k, v in data.items()}
  k_data = stream_key(root, "qam/data")
  discount = float(cfg.discount)

  def block(agent, data, start, length):
    def one(agent, i):
      batch = datasets.sample_chunks(
        data, jax.random.fold_in(k_data, start + i), batch_size, horizon, discount
      )
      return agent.update(batch)

    return jax.lax.scan(one, agent, jnp.arange(length))  # per-update infos (length,)

  run = jax.jit(block, static_argnums=3, donate_argnums=0)
  bar = _progress(num_updates, progress)
  history = []
  # Logging blocks run as compiled sub-blocks of `sub` updates (a power of two <= 64 taking
  # under ~0.5 s once one update is timed; remainders in power-of-two pieces), so that Ctrl-C,
  # seen only between compiled calls, lands within a second. Updates and keys do not depend on it.
  sub, probes = 1, []

  def log_block(agent, c):
    nonlocal sub
    start = c * log_every
    left = length = min(log_every, num_updates - start)
    infos = []
    while left:
      n = sub if left >= sub else 1 << (left.bit_length() - 1)
      t0 = time.perf_counter()
      agent, info = run(agent, dev, jnp.asarray(start + length - left, jnp.int32), n)
      infos.append(jax.block_until_ready(info))
      left -= n
      if n == 1 and len(probes) < 2:
        probes.append(time.perf_counter() - t0)  # the first includes the compile
        if len(probes) == 2:
          sub = max(1, min(64, 2 ** int(math.log2(max(1.0, 0.5 / max(probes[1], 1e-6))))))
    return agent, {k: jnp.concatenate([i[k] for i in infos]) for k in infos[0]}

  def report(done, traces):
    rec = {"step": done, **{k: float(v[-1]) for k, v in traces.items()}}
    history.append(rec)
    if bar == "lines":
      keys = ("critic/loss", "bc/fm_loss", "actor/am_loss")
      shown = " ".join(f"{k}={rec[k]:.4g}" for k in keys if k in rec)
      print(f"QAM update {done}/{num_updates}: {shown}", file=sys.stderr, flush=True)
    elif bar is not None:
      bar.update(done - bar.n)
      bar.set_postfix({k: f"{rec[k]:.3g}" for k in ("critic/loss", "actor/am_loss") if k in rec})

  try:
    agent, _ = run_chunks(
      log_block,
      agent,
      -(-num_updates // log_every),
      steps_per_chunk=log_every,
      num_steps=num_updates,
      name="QAM",
      loss_key="*",
      on_chunk=report,
      keep_traces=False,
    )
  finally:
    if bar not in (None, "lines"):
      bar.close()
  return OfflineAgent(agent, history, reward_scale=scale)
