"""Configs: locked ``ml_collections.ConfigDict`` objects with a small argument language.

``get_config(arg)`` takes the text after the colon in ``--config=path.py:arg``, e.g.
``"smoke,seed=3,model.width=64"``: bare words are variants, ``key=value`` pairs override fields
(dotted keys, type-checked against the default); an unknown key or a value of the wrong type fails
at once, naming the key, before any compute. A config file sets its fields as plain assignments
and ends with ``experiment(c, arg, {variant word: overrides dict or fn(c)})``.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import json
import math
import os
from typing import Any, Callable, Iterable, Mapping, Union

import ml_collections


class ConfigError(ValueError):
  """A config key or value is wrong; the message names the key."""


# Keys renamed when every method package moved its optimiser settings into ``config.optim``. An
# override of an old key fails with a message naming the new one (``apply_overrides``, and
# ``experiments.main`` for ``--config.KEY=`` flags). Keep this table in step with the "Renamed
# config keys" list of docs/runs.md.
RENAMED_KEYS: dict[str, str] = {
  "lmkan.lr": "optim.learning_rate",
  # PDNS: the stage optimiser (``pdns.method.prox_config`` maps ``optim`` onto ``ProxConfig``)
  "prox.learning_rate": "optim.learning_rate",
  "prox.b1": "optim.b1",
  "prox.b2": "optim.b2",
  "prox.grad_clip": "optim.grad_clip",
  # DSB: the solver's optimiser (``dsb.method.solver_config`` maps ``optim`` onto the dataclass)
  "hparams.optimizer": "optim.name",
  "hparams.learning_rate": "optim.learning_rate",
  "hparams.b1": "optim.b1",
  "hparams.b2": "optim.b2",
  "hparams.weight_decay": "optim.weight_decay",
  "hparams.grad_clip": "optim.grad_clip",
  # QAM: the run's batch and schedule length are the run-level keys (one source of truth)
  "agent.batch_size": "batch_size",
  "agent.num_updates": "num_steps",
}


# Whole subtrees that moved: every key below the old prefix lives below the new one.
RENAMED_PREFIXES: dict[str, str] = {
  "agent.optim.": "optim.",  # QAM: the run's optimiser is config.optim, not the agent's
}


def renamed_key_error(key: str) -> ConfigError | None:
  """The error for an override of a key that was renamed (None when ``key`` was not)."""
  new = RENAMED_KEYS.get(key)
  for old_prefix, new_prefix in RENAMED_PREFIXES.items():
    if new is None and key.startswith(old_prefix):
      new = new_prefix + key[len(old_prefix) :]
  if new is None:
    return None
  return ConfigError(
    f"config key '{key}' was renamed: use '{new}' (see 'Renamed config keys' in docs/runs.md)"
  )


def optim_fields(
  optim: ml_collections.ConfigDict,
  fields: dict[str, str],
  fixed: ml_collections.ConfigDict,
  owner: str,
) -> dict[str, Any]:
  """The optimiser fields of a solver dataclass from the run's ``config.optim``.

  Method packages whose solvers keep their optimiser settings in a frozen dataclass (a jit cache
  key) build it from ``config.optim`` here, in one place: the keys the solver's optimiser reads are
  renamed onto its fields; every other ``optim`` key must keep the solver's fixed value (the solver
  would ignore a change, so a change is an error, not a silent no-op).

  Args:
    optim: the run's ``optim`` (``core.optim.optim_defaults()`` shape).
    fields: ``optim`` key -> dataclass field, for the keys the solver reads.
    fixed: the solver's own ``optim`` values (its defaults); the keys not in ``fields`` must
      equal these.
    owner: names the solver in the error (e.g. "the PDNS stage optimiser").

  Returns:
    ``{dataclass field: value}`` for the keys of ``fields``.

  Raises:
    ConfigError: naming ``optim.KEY`` when a key outside ``fields`` differs from ``fixed`` or
      is not a field of ``fixed``.
  """
  out = {}
  for key in optim.keys():
    value = optim[key]
    if key in fields:
      out[fields[key]] = value
    elif key not in fixed:
      raise ConfigError(f"unknown config key 'optim.{key}' (fields: {sorted(fixed.keys())})")
    elif value != fixed[key]:
      raise ConfigError(
        f"config key 'optim.{key}': {owner} has {key} = {fixed[key]!r} "
        f"(it reads only {sorted(fields)} from optim); got {value!r}"
      )
  return out


def _plain(v: Any) -> Any:
  """A config value as a frozen-dataclass field takes it: lists (and ConfigDict sequences) as
  tuples, nested ConfigDicts as dicts."""
  if isinstance(v, ml_collections.ConfigDict):
    return v.to_dict()
  if isinstance(v, list):
    return tuple(_plain(x) for x in v)
  return v


def to_dataclass(
  cls: type,
  section: Mapping[str, Any] | ml_collections.ConfigDict,
  key: str,
  *,
  keys: Mapping[str, str] | None = None,
  **extra: Any,
):
  """The bridge from a run config to a library dataclass: ``cls(**section, **extra)``.

  Method packages keep their settings in frozen dataclasses (jit cache keys); a run config keeps
  them in ConfigDict sections. Errors name the config key.

  Args:
    cls: a dataclass.
    section: the config section whose keys are ``cls``'s field names (lists become tuples).
    key: the section's dotted config key, named in errors (e.g. ``"prox"``).
    keys: for fields given in ``extra`` that come from elsewhere in the config, field -> the
      config key to name in an error about that field (e.g. ``{"batch_size": "batch_size"}``).
    **extra: further fields (values taken from other sections, fixed values).

  Returns:
    The dataclass instance.

  Raises:
    ConfigError: a key of ``section`` that is not a field of ``cls`` (named, with the fields),
      or a value ``cls`` rejects (naming ``key.FIELD`` when the message names a field).

  Examples:
    >>> import dataclasses, ml_collections
    >>> @dataclasses.dataclass(frozen=True)
    ... class Opt:
    ...   widths: tuple = (8,)
    ...   lr: float = 1e-3
    >>> to_dataclass(Opt, ml_collections.ConfigDict({"widths": [4, 4]}), "model", lr=0.1)
    Opt(widths=(4, 4), lr=0.1)
  """
  names = [f.name for f in dataclasses.fields(cls)]
  kw = {k: _plain(v) for k, v in section.items()}
  unknown = sorted(set(kw) - set(names))
  if unknown:
    raise ConfigError(
      f"unknown config key(s) {[f'{key}.{k}' for k in unknown]} (the fields of {cls.__name__} "
      f"read from '{key}': {sorted(set(names) - set(extra))})"
    )
  kw.update(extra)
  try:
    return cls(**kw)
  except (TypeError, ValueError) as e:
    msg = str(e)
    # The dataclasses' own checks name the field first ("lr must be > 0; got ...").
    field = next((f for f in names if msg.startswith(f + " ")), "")
    where = (keys or {}).get(field) or (f"{key}.{field}" if field in section else key)
    raise ConfigError(f"config key '{where}': {msg}") from None


def from_dataclass(obj: Any, fields: Iterable[str] | None = None) -> ml_collections.ConfigDict:
  """The other way: a dataclass instance's fields (or the named ones) as a ConfigDict section
  (tuples as lists, as config files write them)."""
  names = [f.name for f in dataclasses.fields(obj)] if fields is None else list(fields)
  out = ml_collections.ConfigDict()
  for name in names:
    v = getattr(obj, name)
    out[name] = list(v) if isinstance(v, tuple) else v
  return out


def _split_top_level(text: str) -> list[str]:
  """Splits on commas outside brackets, so ``widths=(3,4)`` stays one item."""
  parts, depth, cur = [], 0, []
  for ch in text:
    if ch in "([{":
      depth += 1
    elif ch in ")]}":
      depth -= 1
    if ch == "," and depth == 0:
      parts.append("".join(cur))
      cur = []
    else:
      cur.append(ch)
  parts.append("".join(cur))
  return parts


def parse_arg(arg: str | None) -> tuple[set[str], dict[str, str]]:
  """Splits ``"smoke,seed=3"`` into ``({"smoke"}, {"seed": "3"})``.

  Args:
    arg: the text after ``:`` in ``--config=file.py:arg``, or None.
  Returns:
    (variants, overrides): a set of bare words and a dict of raw string overrides.
  """
  variants: set[str] = set()
  overrides: dict[str, str] = {}
  if not arg:
    return variants, overrides
  for part in _split_top_level(arg):
    part = part.strip()
    if not part:
      continue
    if "=" in part:
      key, value = part.split("=", 1)
      overrides[key.strip()] = value.strip()
    else:
      variants.add(part)
  return variants, overrides


_VARIANT_RECORDERS: list[set[str]] = []


@contextlib.contextmanager
def recording_variants():
  """Collects the ``known`` variant words every ``check_variants`` call inside sees (every
  config reaches it through ``experiment``), so a tool can list what a config file offers::

    with recording_variants() as known:
      module.get_config()
  """
  known: set[str] = set()
  _VARIANT_RECORDERS.append(known)
  try:
    yield known
  finally:
    _VARIANT_RECORDERS.remove(known)


def flat_fields(cfg: ml_collections.ConfigDict, prefix: str = "") -> dict[str, Any]:
  """``{dotted key: value}`` of every leaf field of ``cfg``, in sorted key order."""
  out = {}
  for k in sorted(cfg.keys()):
    v = cfg[k]
    if isinstance(v, ml_collections.ConfigDict) and len(v):
      out.update(flat_fields(v, f"{prefix}{k}."))
    else:
      out[f"{prefix}{k}"] = v
  return out


def check_variants(variants: Iterable[str], known: Iterable[str]) -> None:
  """Raises ConfigError naming any variant word not in ``known``."""
  known = tuple(known)
  for rec in _VARIANT_RECORDERS:
    rec.update(known)
  unknown = sorted(set(variants) - set(known))
  if unknown:
    raise ConfigError(f"unknown config variant(s) {unknown}; this config knows {sorted(known)}")


def _bare_words(raw: str) -> tuple[str, ...] | None:
  """``"(a,b)"`` or ``"a"`` -> ``("a", "b")`` / ``("a",)`` when every item is a plain word."""
  text = raw.strip()
  if text.startswith("(") and text.endswith(")"):
    text = text[1:-1]
  words = tuple(w.strip() for w in text.split(",") if w.strip())
  if words and all(w.replace("_", "").replace("-", "").isalnum() for w in words):
    return words
  return None


def _coerce(key: str, old: Any, raw: str) -> Any:
  """Converts the raw string ``raw`` to the type of the current value ``old``."""
  if isinstance(old, bool):
    low = raw.lower()
    if low in ("true", "1", "yes"):
      return True
    if low in ("false", "0", "no"):
      return False
    raise ConfigError(f"config key '{key}' is a bool; got {raw!r}")
  if isinstance(old, int):
    try:
      return int(raw)
    except ValueError:
      raise ConfigError(f"config key '{key}' is an int; got {raw!r}") from None
  if isinstance(old, float):
    try:
      value = float(raw)
    except ValueError:
      raise ConfigError(f"config key '{key}' is a float; got {raw!r}") from None
    if not math.isfinite(value):
      raise ConfigError(f"config key '{key}' must be a finite number; got {raw!r}")
    return value
  if isinstance(old, str):
    return raw
  try:
    value = ast.literal_eval(raw)
  except (ValueError, SyntaxError):
    words = _bare_words(raw) if isinstance(old, tuple) and old else None
    if words is not None and all(isinstance(x, str) for x in old):
      return words  # a tuple of strings takes bare words: writers=(jsonl,tensorboard)
    raise ConfigError(f"config key '{key}': cannot parse {raw!r} as {type(old).__name__}") from None
  if old is not None and not isinstance(value, type(old)):
    if isinstance(old, tuple) and isinstance(value, list):
      return tuple(value)
    raise ConfigError(
      f"config key '{key}' is a {type(old).__name__}; got {type(value).__name__} {raw!r}"
    )
  return value


def apply_overrides(cfg: ml_collections.ConfigDict, overrides: dict[str, Any]) -> None:
  """Sets dotted keys in place; strings are coerced to the existing field's type.

  Raises:
    ConfigError: a key does not exist (with the keys that do) or a value has the wrong type.
  """
  for key, raw in overrides.items():
    node = cfg
    parts = key.split(".")
    for i, part in enumerate(parts):
      if not isinstance(node, ml_collections.ConfigDict) or part not in node:
        moved = renamed_key_error(key)
        if moved is not None:
          raise moved
        where = ".".join(parts[:i]) or "<root>"
        options = sorted(node.keys()) if isinstance(node, ml_collections.ConfigDict) else []
        raise ConfigError(
          f"unknown config key '{key}' ('{part}' is not a field of {where}; fields: {options})"
        )
      if i < len(parts) - 1:
        node = node[part]
    leaf = parts[-1]
    old = node[leaf]
    value = _coerce(key, old, raw) if isinstance(raw, str) else raw
    with node.unlocked():
      node[leaf] = value


# The ``smoke`` variant's trainer part (20 steps, logs every 5, checkpoints every 10); a config's
# ``smoke`` entry adds its own small sizes: ``{**config_lib.SMOKE_TRAINER, "batch_size": 32}``.
SMOKE_TRAINER: dict[str, Any] = {"num_steps": 20, "log_every": 5, "checkpoint_every": 10}

Variant = Union[Mapping[str, Any], Callable[[ml_collections.ConfigDict], None]]


def experiment(
  cfg: ml_collections.ConfigDict,
  arg: str | None,
  variants: Mapping[str, Variant] | None = None,
  *,
  one_of: Mapping[str, Iterable[str]] | None = None,
  validate: Callable[[ml_collections.ConfigDict], Any] | None = None,
) -> ml_collections.ConfigDict:
  """The end of every config file's ``get_config(arg)``: variants, overrides, checks, lock.

  Steps, in order:
    1. every bare word of ``arg`` must be a key of ``variants`` (``check_variants``, so
       ``experiments.main --show_variants`` lists them), and at most one word of each
       ``one_of`` group may be named;
    2. the named variants are applied in the order of the ``variants`` dict (not of ``arg``):
       a mapping value is a set of dotted-key overrides (``apply_overrides``), a callable
       mutates the config in place (it may read fields that earlier variants set);
    3. the ``key=value`` overrides of ``arg`` (after every variant, so they win);
    4. the config is locked and ``validate(cfg)`` (if given) runs, so a bad value stops here.

  Args:
    cfg: the unlocked config with the experiment's own settings.
    arg: the text after ``:`` in ``--config=file.py:arg`` (e.g. ``"smoke,seed=3"``), or None.
    variants: variant word -> overrides dict or ``fn(cfg)``; dict order = application order.
    one_of: label -> words of which at most one may be named (e.g. ``{"presets": names}``).
    validate: called on the locked config; raises ``ConfigError`` naming a bad key.

  Returns:
    ``cfg``, with the variants and overrides applied, locked.

  Raises:
    ConfigError: an unknown variant word, several words of one ``one_of`` group, an unknown
      key or a value of the wrong type (naming the key), or whatever ``validate`` raises.
  """
  variants = dict(variants or {})
  words, overrides = parse_arg(arg)
  for label, group in (one_of or {}).items():
    named = sorted(words & set(group))
    if len(named) > 1:
      raise ConfigError(f"config variants name several {label} {named}; pick one")
  check_variants(words, variants)
  for word, body in variants.items():
    if word not in words:
      continue
    if callable(body):
      body(cfg)
    else:
      apply_overrides(cfg, dict(body))
  apply_overrides(cfg, overrides)
  cfg.lock()
  if validate is not None:
    validate(cfg)
  return cfg


def require(cfg: ml_collections.ConfigDict, *keys: str) -> None:
  """Raises ConfigError if a dotted key is missing from ``cfg``."""
  for key in keys:
    lookup(cfg, key)


def to_dict(cfg: ml_collections.ConfigDict) -> dict:
  """A JSON-serialisable plain dict of ``cfg`` (tuples become lists)."""
  return json.loads(cfg.to_json_best_effort())


def dump(cfg: ml_collections.ConfigDict, workdir: str, name: str = "config.json") -> str:
  """Writes the resolved config as JSON into ``workdir``; returns the path."""
  os.makedirs(workdir, exist_ok=True)
  path = os.path.join(workdir, name)
  tmp = path + ".tmp"
  with open(tmp, "w") as f:
    json.dump(to_dict(cfg), f, indent=2, sort_keys=True)
  os.replace(tmp, path)
  return path


def apply_smoke(cfg: ml_collections.ConfigDict, **fields) -> None:
  """The ``smoke`` variant's trainer settings (20 steps, logs every 5, checkpoints every 10),
  then ``fields`` as dotted-key overrides (e.g. ``batch_size=32``, ``lmkan.test_size=256``)."""
  apply_overrides(cfg, {**SMOKE_TRAINER, **fields})


def trainer_defaults() -> ml_collections.ConfigDict:
  """The fields every trained config carries (the trainer reads them).

  Methods start their ``default_config()`` from this and add a ``method`` name and their own
  fields.
  """
  c = ml_collections.ConfigDict()
  c.method = ""  # registry name of the method package
  c.seed = 0  # root PRNG seed; every step folds its index into it
  c.num_steps = 1000  # total optimizer steps
  c.batch_size = 256  # global batch size (split over processes and devices)
  c.log_every = 100  # steps between metric fetches / log lines
  c.eval_every = 1000  # steps between evaluations (0 = only at the end)
  c.checkpoint_every = 1000  # steps between checkpoints (the last step is always saved)
  c.keep_checkpoints = 3  # how many checkpoints Orbax keeps
  # mesh axes in order, name -> size; -1 = all remaining devices (at most one axis)
  c.mesh = ml_collections.ConfigDict({"data": -1})
  c.param_sharding = "replicated"  # "replicated" or "fsdp" (largest divisible dim over 'data')
  c.progress_bar = True  # tqdm bar on process 0
  # metric backends on process 0: "jsonl" (<workdir>/metrics.jsonl) and/or "tensorboard"
  # (<workdir>/tensorboard/, needs tensorboardX); --config.writers=jsonl,tensorboard
  c.writers = ("jsonl",)
  return c


# -- range checks on entry ----------------------------------------------------------------------
# Every method package's ``validate(config)`` states its sizes, counts and rates with these, so a
# bad value stops ``experiments.main`` in one line naming the full dotted key, before any file is
# written. A read inside them does not count as a use of the field (test_config_fields.py).

_MISSING = object()


def lookup(cfg: ml_collections.ConfigDict, key: str, default: Any = _MISSING) -> Any:
  """The value at dotted ``key`` (``default`` when a part is missing and one is given).

  Raises:
    ConfigError: the key is missing and no default is given.
  """
  node = cfg
  for part in key.split("."):
    if not isinstance(node, ml_collections.ConfigDict) or part not in node:
      if default is not _MISSING:
        return default
      raise ConfigError(f"config is missing required key '{key}'")
    node = node[part]
  return node


def _bound_text(ge, gt, le, lt) -> str:
  if (ge is not None or gt is not None) and (le is not None or lt is not None):
    lo = f"[{ge}" if ge is not None else f"({gt}"
    hi = f"{le}]" if le is not None else f"{lt})"
    return f"in {lo}, {hi}"
  parts = [f"{op} {b}" for op, b in ((">=", ge), (">", gt), ("<=", le), ("<", lt)) if b is not None]
  return " and ".join(parts)


def check_range(
  cfg: ml_collections.ConfigDict,
  *keys: str,
  ge: float | None = None,
  gt: float | None = None,
  le: float | None = None,
  lt: float | None = None,
  optional: bool = False,
) -> None:
  """Checks that every dotted key's value lies in the given bounds.

  A tuple or list value (layer widths, ``(32, 32)``) is checked item by item; ``()`` passes.

  Args:
    cfg: the config.
    *keys: dotted keys (``"toy.dim"``).
    ge, gt, le, lt: inclusive / exclusive lower and upper bounds (None = unbounded).
    optional: skip keys the config does not have (else a missing key is an error).

  Raises:
    ConfigError: one line naming the key, e.g. ``config key 'toy.dim' must be >= 1; got -3``.
  """
  text = _bound_text(ge, gt, le, lt)
  for key in keys:
    value = lookup(cfg, key, None if optional else _MISSING)
    if value is None and optional:
      continue
    items = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    for v in items:
      bad = isinstance(v, bool) or not isinstance(v, (int, float))
      if not bad:
        bad = (
          (ge is not None and not v >= ge)
          or (gt is not None and not v > gt)
          or (le is not None and not v <= le)
          or (lt is not None and not v < lt)
        )
      if bad:
        what = (
          f"must hold numbers {text}" if isinstance(value, (tuple, list)) else f"must be {text}"
        )
        raise ConfigError(f"config key '{key}' {what}; got {value!r}")


def positive(cfg: ml_collections.ConfigDict, *keys: str, optional: bool = False) -> None:
  """Sizes and counts: every key's value (or every item of a tuple of widths) is >= 1."""
  check_range(cfg, *keys, ge=1, optional=optional)


def nonneg(cfg: ml_collections.ConfigDict, *keys: str, optional: bool = False) -> None:
  """Rates, scales, optional counts (0 = off): every key's value is >= 0."""
  check_range(cfg, *keys, ge=0, optional=optional)


def fraction(cfg: ml_collections.ConfigDict, *keys: str, optional: bool = False) -> None:
  """Probabilities and decays: every key's value lies in [0, 1]."""
  check_range(cfg, *keys, ge=0, le=1, optional=optional)


def check_finite(cfg: ml_collections.ConfigDict) -> None:
  """Every float field (and every float item of a tuple or list field), at any depth, is finite.

  NaN compares false with every bound, so a range check alone lets it through.

  Raises:
    ConfigError: one line naming the first dotted key (sorted) holding NaN or +-inf.
  """
  for key, value in flat_fields(cfg).items():
    items = value if isinstance(value, (tuple, list)) else (value,)
    for v in items:
      if isinstance(v, float) and not math.isfinite(v):
        raise ConfigError(f"config key '{key}' must be a finite number; got {value!r}")


def check_run(cfg: ml_collections.ConfigDict) -> None:
  """The trainer-level fields every trained config carries (``trainer_defaults``), and the
  run's optimiser when it has one: a negative learning rate is an error (it would ascend).
  Every float field of the config must be finite (``check_finite``)."""
  check_finite(cfg)
  positive(cfg, "num_steps", "batch_size", "log_every", "checkpoint_every", "keep_checkpoints")
  nonneg(cfg, "eval_every")
  nonneg(cfg, "optim.learning_rate", "optim.warmup_steps", "optim.weight_decay", optional=True)
  nonneg(cfg, "optim.grad_clip", "optim.eps", "optim.decay_steps", "optim.momentum", optional=True)
  fraction(cfg, "optim.b1", "optim.b2", "optim.end_lr_factor", optional=True)
