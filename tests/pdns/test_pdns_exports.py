"""iclr26_jax.pdns's public names: each resolves to the object its module defines, and importing
the package leaves the training core, Orbax and the sampler modules unimported."""

import importlib
import os
import subprocess
import sys

import pytest

import iclr26_jax.pdns as pdns

_MODULES = (
  "api",
  "continuous",
  "discrete",
  "discrete_targets",
  "egnn",
  "mcmc",
  "method",
  "particles",
  "proximal",
  "references",
  "targets",
)


def test_every_export_is_its_modules_object():
  assert len(set(pdns.__all__)) == len(pdns.__all__)
  assert set(pdns._LAZY) <= set(pdns.__all__)
  modules = [importlib.import_module(f"iclr26_jax.pdns.{m}") for m in _MODULES]
  for name in pdns.__all__:
    owners = [m for m in modules if name in m.__all__]
    assert len(owners) == 1, (name, [m.__name__ for m in owners])
    assert getattr(pdns, name) is getattr(owners[0], name), name
  with pytest.raises(AttributeError, match="no_such_name"):
    pdns.no_such_name  # noqa: B018


def test_package_import_is_cheap():
  heavy = (
    "iclr26_jax.core.trainer",
    "orbax.checkpoint",
    "iclr26_jax.pdns.continuous",
    "iclr26_jax.pdns.discrete",
    "iclr26_jax.pdns.proximal",
    "iclr26_jax.pdns.method",
  )
  code = f"import sys, iclr26_jax.pdns; print(sorted(m for m in {heavy!r} if m in sys.modules))"
  out = subprocess.run(
    [sys.executable, "-c", code],
    capture_output=True,
    text=True,
    check=True,
    env={**os.environ, "JAX_PLATFORMS": "cpu"},
  )
  assert out.stdout.strip() == "[]", out.stdout
