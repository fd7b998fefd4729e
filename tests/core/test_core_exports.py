"""iclr26_jax.core's public names: each resolves to the object its module defines, and importing
the package or its config / workdir modules still imports no jax (config files run before jax)."""

import importlib
import subprocess
import sys

import pytest

import iclr26_jax.core as core


def test_every_export_is_its_modules_object():
  assert sorted(core.__all__) == sorted(core._EXPORTS)
  for name, module in core._EXPORTS.items():
    assert getattr(core, name) is getattr(
      importlib.import_module(f"iclr26_jax.core.{module}"), name
    ), name
  assert set(core.__all__) <= set(dir(core))
  with pytest.raises(AttributeError, match="no_such_name"):
    core.no_such_name  # noqa: B018


def test_package_and_config_import_without_jax():
  code = (
    "import sys, iclr26_jax.core, iclr26_jax.core.config, iclr26_jax.core.workdir; "
    "print(sorted(m for m in ('jax', 'numpy', 'orbax.checkpoint') if m in sys.modules))"
  )
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
  assert out.stdout.strip() == "[]", out.stdout
