"""Method registry: ``config.method`` → the ``Method`` class, imported lazily.

To add a method, add one line here: its name and ``"module:ClassName"``.
"""

import importlib

METHODS = {
  "toy_regression": "iclr26_jax.core.toy:ToyRegression",
  "lmkan": "iclr26_jax.lmkan.method:LMKANMethod",
  "minpv": "iclr26_jax.minpv.method:MinPVMethod",
  "dsb": "iclr26_jax.dsb.method:DSBMethod",
  "pdns": "iclr26_jax.pdns.method:PDNSMethod",
  "qam": "iclr26_jax.qam.method:QAMMethod",
  "anybcq_lm": "iclr26_jax.anybcq.method:AnyBCQLMMethod",
}


def get_method(name: str):
  """The ``Method`` subclass registered as ``name``."""
  if name not in METHODS:
    raise ValueError(f"unknown method {name!r}; registered: {sorted(METHODS)}")
  module, cls = METHODS[name].split(":")
  return getattr(importlib.import_module(module), cls)
