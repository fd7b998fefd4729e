"""iclr26_jax.qam's public names: each resolves to the object its module defines, and importing the
package imports neither jax nor the training core."""

import importlib
import subprocess
import sys

import pytest

import iclr26_jax.qam as qam


def test_every_export_is_its_modules_object():
  assert sorted(qam.__all__) == sorted(qam._EXPORTS)
  for name, module in qam._EXPORTS.items():
    assert getattr(qam, name) is getattr(
      importlib.import_module(f"iclr26_jax.qam.{module}"), name
    ), name
  assert set(qam.__all__) <= set(dir(qam))
  with pytest.raises(AttributeError, match="no_such_name"):
    qam.no_such_name  # noqa: B018


def test_package_import_is_cheap():
  code = (
    "import sys, iclr26_jax.qam; print(sorted(m for m in ('jax', 'iclr26_jax.core.trainer', "
    "'iclr26_jax.qam.agent') if m in sys.modules))"
  )
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
  assert out.stdout.strip() == "[]", out.stdout
