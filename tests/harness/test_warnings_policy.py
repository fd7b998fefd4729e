"""The deprecation policy the suite enforces: a DeprecationWarning or FutureWarning attributed to
the project's own code is an error, in process (setup.cfg) and in the smoke subprocesses
(``strict_python``); one raised inside a third-party package is not."""

import subprocess
import warnings

import pytest

from tests.conftest import REPO, strict_python, subprocess_env


def test_in_process_own_module_deprecation_is_an_error():
  with pytest.raises(DeprecationWarning):
    warnings.warn_explicit("old api", DeprecationWarning, "x.py", 1, module="iclr26_jax.core.x")
  with pytest.raises(FutureWarning):
    warnings.warn_explicit("old api", FutureWarning, "x.py", 1, module="kernels_pallas.x")
  with warnings.catch_warnings(record=True) as seen:
    warnings.warn_explicit("theirs", DeprecationWarning, "y.py", 1, module="somepackage.y")
  assert not any(issubclass(w.category, DeprecationWarning) for w in seen)


@pytest.mark.parametrize("category,fails", [("DeprecationWarning", True), ("UserWarning", False)])
def test_strict_subprocess(tmp_path, category, fails):
  script = tmp_path / "script.py"
  script.write_text(f"import warnings\nwarnings.warn('old api', {category})\nprint('ran')\n")
  r = subprocess.run(
    strict_python(str(script), module=False),
    cwd=REPO,
    env=subprocess_env(),
    capture_output=True,
    text=True,
    timeout=60,
  )
  assert (r.returncode != 0) == fails, r.stderr
  assert ("ran" in r.stdout) != fails
