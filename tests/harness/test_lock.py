"""The lock files in requirements/ against setup.cfg: what `make test`, `make reproduce` and CI
install must be a resolution of the ranges a library user gets from `pip install .`."""

import configparser
import os

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.conftest import REPO
from tests.helpers import LOCK, LOCK_COMPILE, read_lock

# The extras each lock resolves (the Makefile's `lock` target installs exactly these).
LOCK_EXTRAS = {LOCK: ("test", "rl", "models", "docs"), LOCK_COMPILE: ("test", "compile")}


def setup_requirements(extras) -> list[Requirement]:
  cfg = configparser.ConfigParser()
  cfg.read(os.path.join(REPO, "setup.cfg"))

  def reqs(text):
    lines = (line.split("#")[0].strip() for line in text.splitlines())
    return [Requirement(line) for line in lines if line]

  out = reqs(cfg["options"]["install_requires"])
  for extra in extras:
    out += reqs(cfg["options.extras_require"][extra])
  return out


@pytest.mark.parametrize("lock", [LOCK, LOCK_COMPILE], ids=os.path.basename)
def test_lock_satisfies_setup_cfg(lock):
  pins = read_lock(lock)
  problems = []
  for req in setup_requirements(LOCK_EXTRAS[lock]):
    name = canonicalize_name(req.name)  # jax[tpu]-style requirements are checked on jax itself
    if name not in pins:
      problems.append(f"{req} is not in the lock")
    elif not req.specifier.contains(pins[name], prereleases=True):
      problems.append(f"{req}: the lock has {name}=={pins[name]}")
  assert not problems, f"{os.path.basename(lock)} disagrees with setup.cfg:\n" + "\n".join(problems)


def test_locks_agree_with_each_other():
  """A package in both locks has one version: the compile tier tests what the other tiers run."""
  a, b = read_lock(LOCK), read_lock(LOCK_COMPILE)
  diff = {n: (str(a[n]), str(b[n])) for n in set(a) & set(b) if a[n] != b[n]}
  assert not diff, f"lock.txt vs lock-compile.txt: {diff}"


def test_lock_has_no_torch_or_tensorflow():
  for lock in (LOCK, LOCK_COMPILE):
    pins = read_lock(lock)
    assert not {"torch", "tensorflow", "tensorflow-cpu"} & set(pins), lock


def test_cuda_plugin_matches_jax():
  """The compile tier's CUDA plugin and PJRT wheels are built for exactly the locked jax."""
  pins = read_lock(LOCK_COMPILE)
  for name in ("jax-cuda13-plugin", "jax-cuda13-pjrt", "jaxlib"):
    assert pins[name] == pins["jax"], (name, pins[name], pins["jax"])


def test_installed_versions_are_the_lock():
  """The interpreter running the tests has the lock's versions (CI installs from the lock)."""
  from importlib import metadata

  pins = read_lock(LOCK)
  for name in ("jax", "jaxlib", "flax", "optax", "orbax-checkpoint", "numpy"):
    assert Version(metadata.version(name)) == pins[name], name
