"""Method registry: ``config.method`` → the ``Method`` class, imported lazily.

To add a method, add one line here: its name and ``"module:ClassName"``, and one line to
``VALIDATORS``: the function that range-checks its config (``core.config.positive`` & co.).
"""

import importlib

METHODS = {
  "toy_regression": "experiments.toy:ToyRegression",
  "lmkan": "iclr26_jax.lmkan.method:LMKANMethod",
  "minpv": "iclr26_jax.minpv.method:MinPVMethod",
  "dsb": "iclr26_jax.dsb.method:DSBMethod",
  "pdns": "iclr26_jax.pdns.method:PDNSMethod",
  "qam": "iclr26_jax.qam.method:QAMMethod",
  "anybcq_lm": "iclr26_jax.anybcq.method:AnyBCQLMMethod",
}


# config.method -> "module:function" raising ``core.config.ConfigError`` naming the dotted key of
# a bad value; ``validate`` runs it (after the run-level checks) before anything is built.
VALIDATORS = {
  "toy_regression": "experiments.toy:validate",
  "lmkan": "iclr26_jax.lmkan.method:validate",
  "minpv": "iclr26_jax.minpv.method:validate",
  "dsb": "experiments.configs.dsb:validate",
  "pdns": "iclr26_jax.pdns.method:validate",
  "qam": "iclr26_jax.qam.method:validate",
  "anybcq_lm": "iclr26_jax.anybcq.method:validate",
}


def _load(spec: str):
  module, attr = spec.split(":")
  return getattr(importlib.import_module(module), attr)


def validate(config) -> None:
  """Checks ``config`` before a run starts: the run-level fields (``core.config.check_run``) and the
  method's own ranges (``VALIDATORS``). Builds nothing and writes nothing.

  Raises:
    core.config.ConfigError: one line naming the dotted key (``config key 'toy.dim' must be >=
      1; got -3``).
  """
  from iclr26_jax.core import config as config_lib

  get_method(config.method)  # an unknown method name first
  config_lib.check_run(config)
  _load(VALIDATORS[config.method])(config)


def get_method(name: str):
  """The ``Method`` subclass registered as ``name``."""
  if name not in METHODS:
    raise ValueError(f"unknown method {name!r}; registered: {sorted(METHODS)}")
  return _load(METHODS[name])
