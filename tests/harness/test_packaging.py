"""Packaging: what a (non-editable) install puts into site-packages."""

import os

from tests.conftest import REPO


def _packages() -> list[str]:
  """The package list setuptools resolves from setup.cfg (``packages = find:`` and its filter),
  run from the repository root as a build would."""
  from setuptools.config.setupcfg import read_configuration

  cwd = os.getcwd()
  os.chdir(REPO)
  try:
    return list(read_configuration(os.path.join(REPO, "setup.cfg"))["options"]["packages"])
  finally:
    os.chdir(cwd)


def test_no_top_level_experiments_package():
  """A wheel must not install a top-level ``experiments`` or ``benchmarks`` (either would shadow a
  user's own); both run from the repository root."""
  pkgs = _packages()
  tops = {p.split(".")[0] for p in pkgs}
  assert tops == {"iclr26_jax", "kernels_pallas"}, sorted(tops)
  assert "iclr26_jax.minpv" in pkgs and "kernels_pallas.spline_lookup" in pkgs
