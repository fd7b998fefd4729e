"""The OGBench loader checks its ``.npz`` files at load time, each fault one line naming the file
and the array: a NaN or inf with the first bad row (a NaN used to surface 44 s later as a
divergence "at step 8" pointing at the model), integer values where floats are expected, a file
cut short mid-episode, empty or missing an array, arrays of unequal rows, a file that is not an
archive, an observation width of another environment, and button states of the wrong width or
values. A bad file stops ``experiments.main`` in one line, before a workdir exists.

Oracle: tiny files written here with one known fault planted (a NaN / inf at a known row and
column, a cast, a cut, a dropped array or column), and the exact error each must give.
"""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from iclr26_jax.core import datacheck
from iclr26_jax.qam.envs import ogbench_env as oe
from iclr26_jax.qam.envs import ogbench_generate as og
from tests.conftest import REPO, subprocess_env
from tests.helpers import stderr_lines

PUZZLE = "puzzle-3x3-play-singletask-task1-v0"


def _write(dataset_dir, train_bad=None, val_bad=None):
  """Writes ``puzzle-3x3-play-v0{,-val}.npz`` (8 rows; int ``button_states``) and plants
  ``value`` at ``(key, row, col)`` for each ``*_bad``; returns the two paths."""
  paths = og.dataset_paths("puzzle-3x3-play-v0", str(dataset_dir))
  for path, bad in zip(paths, (train_bad, val_bad)):
    rng = np.random.default_rng(0)
    data = {
      "observations": rng.standard_normal((8, 55)).astype(np.float32),
      "actions": rng.uniform(-1, 1, (8, 5)).astype(np.float32),
      "terminals": (np.arange(8) == 7).astype(np.float32),
      "button_states": np.zeros((8, 9), np.int64),
      "qpos": np.zeros((8, 30), np.float32),
      "qvel": np.zeros((8, 30), np.float32),
    }
    if bad is not None:
      key, row, col, value = bad
      data[key][row, col] = value
    np.savez_compressed(path, **data)
  return paths


def test_clean_files_pass(tmp_path):
  oe.check_finite_files(_write(tmp_path))


def test_nan_names_file_key_and_first_bad_row(tmp_path):
  train, _ = _write(tmp_path, train_bad=("actions", 5, 3, np.nan))
  msg = f"{train}['actions']: non-finite value nan at data row 5, column 3"
  with pytest.raises(ValueError, match=re.escape(msg)):
    oe.check_finite_files([train])


def test_inf_in_validation_file_is_named(tmp_path):
  paths = _write(tmp_path, val_bad=("observations", 6, 40, -np.inf))
  with pytest.raises(
    ValueError, match=re.escape(f"{paths[1]}['observations']: non-finite value -inf at data row 6")
  ):
    oe.check_finite_files(paths)


def test_load_checks_before_training_sees_the_data(tmp_path):
  pytest.importorskip("ogbench", reason='OGBench tests need the [rl] extra: pip install -e ".[rl]"')
  train, _ = _write(tmp_path, train_bad=("observations", 2, 0, np.nan))
  with pytest.raises(
    ValueError, match=re.escape(f"{train}['observations']: non-finite value nan at data row 2")
  ):
    oe.load(PUZZLE, str(tmp_path))


@pytest.mark.parametrize(
  "width,value,message",
  [
    (1, 0, "expected 9 columns (the buttons of puzzle-3x3); got 1"),
    (8, 0, "expected 9 columns (the buttons of puzzle-3x3); got 8"),
    (9, 3, "expected 0 / 1 values; got [0, 3]"),
  ],
)
def test_button_states_width_and_values(tmp_path, width, value, message):
  """OGBench relabels puzzle rewards by broadcasting button_states against the target: a (n, 1)
  array or values other than 0 / 1 would give wrong rewards silently. Refused at load."""
  paths = _write(tmp_path)
  z = dict(np.load(paths[0]))
  z["button_states"] = np.zeros((8, width), np.int64)
  z["button_states"][3, 0] = value
  np.savez_compressed(paths[0], **z)
  with pytest.raises(ValueError, match=re.escape(f"{paths[0]}['button_states']: {message}")):
    oe.check_files(paths, "puzzle-3x3")
  assert oe.button_count("puzzle-4x5") == 20 and oe.button_count("scene") == 2
  assert oe.button_count("cube-double") == 0


# -- dtype, rows, keys, widths and unreadable files ------------------------------------------------


def _ogbench_files(folder, mode="ok"):
  """Tiny ``puzzle-3x3-play-v0{,-val}.npz`` (2 episodes of 20 rows), damaged as ``mode``."""
  from iclr26_jax.qam.envs import ogbench_generate as og

  paths = og.dataset_paths("puzzle-3x3-play-v0", str(folder))
  os.makedirs(folder, exist_ok=True)
  for path in paths:
    rng = np.random.default_rng(0)
    n = 40
    d = {
      "observations": rng.standard_normal((n, 55)).astype(np.float32),
      "actions": rng.uniform(-1, 1, (n, 5)).astype(np.float32),
      "terminals": (np.arange(n) % 20 == 19).astype(np.float32),
      "button_states": np.zeros((n, 9), np.int64),
      "qpos": np.zeros((n, 30), np.float32),
      "qvel": np.zeros((n, 30), np.float32),
    }
    if mode == "int32":
      d["observations"] = (d["observations"] * 5).astype(np.int32)
    elif mode == "width":
      d["observations"] = d["observations"][:, :54]
    elif mode == "cut":
      d = {k: v[:33] for k, v in d.items()}
    elif mode == "empty":
      d = {k: v[:0] for k, v in d.items()}
    elif mode == "nokey":
      del d["actions"]
    elif mode == "rows":
      d["actions"] = d["actions"][:-20]
    elif mode == "buttons8":
      d["button_states"] = d["button_states"][:, :8]
    np.savez_compressed(path, **d)
    if mode == "garbage":
      with open(path, "wb") as f:
        f.write(b"\x00not an archive" * 50)
  return paths


def _main(*args, timeout=300, **popen):
  return subprocess.run(
    [sys.executable, "-m", "experiments.main", *args],
    capture_output=True,
    text=True,
    cwd=REPO,
    env=subprocess_env(XLA_FLAGS=""),
    timeout=timeout,
    **popen,
  )


@pytest.mark.parametrize(
  "mode,expected",
  [
    ("int32", "['observations']: expected floating values; got dtype int32"),
    (
      "cut",
      "['terminals']: the last row is not an episode's end (the file was cut short, 33 rows)",
    ),
    ("empty", "['observations']: expected at least 2 row(s); got shape (0, 55) (empty)"),
    ("nokey", ": missing required array(s) ['actions']"),
    ("rows", ": arrays must have the same number of rows"),
    ("garbage", ": cannot be read as a .npz archive"),
  ],
)
def test_ogbench_files_are_checked_at_load(tmp_path, mode, expected):
  from iclr26_jax.qam.envs import ogbench_env as oe

  paths = _ogbench_files(tmp_path, mode)
  with pytest.raises(datacheck.DataError) as e:
    oe.check_files(paths, "puzzle-3x3")
  assert str(e.value).startswith(paths[0]) and expected in str(e.value), e.value
  assert "\n" not in str(e.value)


def test_ogbench_width_is_checked_against_the_environment_at_load(tmp_path):
  pytest.importorskip("ogbench", reason='OGBench tests need the [rl] extra: pip install -e ".[rl]"')
  from iclr26_jax.qam.envs import ogbench_env as oe

  paths = _ogbench_files(tmp_path, "width")
  with pytest.raises(datacheck.DataError) as e:
    oe.load(PUZZLE, str(tmp_path))
  assert str(e.value) == (
    f"{paths[0]}['observations']: expected 55 columns (the observation size of {PUZZLE}); got 54: "
    "the file was written for another environment"
  )


@pytest.mark.parametrize(
  "mode,expected",
  [
    (
      "int32",
      "['observations']: expected floating values; got dtype int32 (a cast would truncate or "
      "change the values)",
    ),
    ("buttons8", "['button_states']: expected 9 columns (the buttons of puzzle-3x3); got 8"),
  ],
)
def test_a_bad_data_file_stops_main_in_one_line_with_no_workdir(tmp_path, mode, expected):
  # No traceback (OGBench's relabelling used to fail deep inside on 8 button columns).
  pytest.importorskip("ogbench", reason='OGBench tests need the [rl] extra: pip install -e ".[rl]"')
  paths = _ogbench_files(tmp_path / "data", mode)
  work = tmp_path / "w"
  out = _main(
    "--config=experiments/configs/qam/ogbench_puzzle3x3.py:smoke,data.generate_episodes=0,"
    f"data.dataset_dir={tmp_path / 'data'}",
    f"--workdir={work}",
  )
  assert out.returncode == 1, out.stderr[-3000:]
  lines = [ln for ln in stderr_lines(out.stderr) if "GLFW" not in ln and "DISPLAY" not in ln]
  assert len(lines) == 1 and lines[0].startswith(f"error: {paths[0]}"), out.stderr
  assert expected in lines[0], lines[0]
  assert not work.exists()
