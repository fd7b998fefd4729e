"""Test-wide setup. The device count comes from the tier (see the Makefile): tests that need
several devices ask for them through the ``devices`` fixture and fail loudly without them."""

import os
import sys

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def subprocess_env(**extra) -> dict:
  """Environment for child processes: this interpreter's, CPU only, repo importable."""
  env = dict(os.environ)
  env["JAX_PLATFORMS"] = "cpu"
  env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
  env.update({k: str(v) for k, v in extra.items()})
  return env


@pytest.fixture
def repo_root() -> str:
  return REPO


@pytest.fixture
def python() -> str:
  return sys.executable


def need_devices(n: int):
  import jax
  if jax.device_count() < n:
    pytest.fail(f"this test needs {n} devices; run it with "
                "XLA_FLAGS=--xla_force_host_platform_device_count=8 (as `make test` does)")
  return jax.devices()[:n]
