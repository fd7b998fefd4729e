"""Test-wide setup. The device count comes from the tier (see the Makefile): tests that need
several devices ask for them through the ``devices`` fixture and fail loudly without them."""

import os
import sys

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# A run finished by experiments.main draws WORKDIR/curves.png (experiments.curves, ~0.3-1 s of
# matplotlib per run); the suite's runs skip it, tests/harness/test_plot.py turns it back on.
os.environ.setdefault("ICLR26_CURVES", "0")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The project's own modules (and a script run as __main__): a DeprecationWarning or FutureWarning
# attributed to one of their frames is an error in the tests (setup.cfg's filterwarnings does the
# same for in-process tests). Warnings raised inside third-party code stay warnings.
OWN_MODULES = r"(iclr26_jax|kernels_pallas|experiments|benchmarks|examples)(\..*)?$|__main__$"
_STRICT = (
  "import runpy, sys, warnings\n"
  "for c in (DeprecationWarning, FutureWarning):\n"
  f"  warnings.filterwarnings('error', category=c, module={OWN_MODULES!r})\n"
  "kind, target = sys.argv[1], sys.argv[2]\n"
  "sys.argv = sys.argv[2:]\n"
  "if kind == '-m':\n"
  "  runpy.run_module(target, run_name='__main__', alter_sys=True)\n"
  "else:\n"
  "  runpy.run_path(target, run_name='__main__')\n"
)


def strict_python(target: str, *args: str, module: bool = True) -> list[str]:
  """argv that runs ``python -m target args`` (or the script ``target`` when ``module=False``)
  with deprecation warnings from the project's own frames turned into errors."""
  return [sys.executable, "-c", _STRICT, "-m" if module else "-s", target, *args]


def subprocess_env(**extra) -> dict:
  """Environment for child processes: this interpreter's, CPU only, repo importable."""
  env = dict(os.environ)
  env["JAX_PLATFORMS"] = "cpu"
  env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
  env.update({k: str(v) for k, v in extra.items()})
  return env


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
  """Work units for ``--dist loadgroup`` (the Makefile's tiers): one unit per test file, so a
  file's module fixtures are built once, as ``--dist loadfile`` would; but each parameter of a
  test marked ``split_params`` (a subprocess per config, a kernel per notebook) is a unit of its
  own, so the two workers share those long parametrised runs instead of one worker taking all."""
  del config
  for item in items:
    if item.get_closest_marker("xdist_group"):
      continue
    if item.get_closest_marker("split_params"):
      group = item.nodeid
    else:
      group = item.nodeid.split("::")[0]
    # xdist reads the group after the last "@" unless a "]" follows it: keep both out of names.
    item.add_marker(pytest.mark.xdist_group(group.translate(str.maketrans("@[]", "___"))))


@pytest.fixture
def repo_root() -> str:
  return REPO


@pytest.fixture
def python() -> str:
  return sys.executable


def need_devices(n: int):
  import jax

  if jax.device_count() < n:
    pytest.fail(
      f"this test needs {n} devices; run it with "
      "XLA_FLAGS=--xla_force_host_platform_device_count=8 (as `make test` does)"
    )
  return jax.devices()[:n]


class Kill(Exception):
  """Raised by ``kill_at`` hooks: a simulated crash of ``trainer.train``."""


def kill_at(k: int):
  """A ``trainer.train`` hook that raises ``Kill`` right after step ``k``."""

  def hook(step, state):
    del state
    if step == k:
      raise Kill(f"simulated kill after step {k}")

  return hook


def assert_trees_equal(a, b):
  """Bitwise equality of two pytrees of arrays (fetched to the host)."""
  import jax
  import numpy as np

  la = jax.tree.leaves(jax.tree.map(np.asarray, jax.device_get(a)))
  lb = jax.tree.leaves(jax.tree.map(np.asarray, jax.device_get(b)))
  assert len(la) == len(lb)
  for x, y in zip(la, lb):
    np.testing.assert_array_equal(x, y)


def config_from_flags(spec: str, *overrides: str):
  """The locked config ``experiments.main`` would get from ``--config=SPEC`` followed by the
  ``--config.KEY=VALUE`` flags ``overrides`` (absl applies those after ``get_config``), parsed
  in-process on a private ``FlagValues``."""
  from absl import flags
  from ml_collections import config_flags

  argv = ["prog", f"--config={os.path.join(REPO, spec)}", *overrides]
  values = flags.FlagValues()
  config_flags.DEFINE_config_file(
    "config", None, "", flag_values=values, lock_config=True, sys_argv=argv
  )
  values(argv)
  return values.config
