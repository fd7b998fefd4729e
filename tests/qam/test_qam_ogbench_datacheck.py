"""The OGBench loader rejects a NaN or inf in its ``.npz`` files at load time, naming the file, the
array and the first bad row (issue #31 item 4: a NaN used to surface 44 s later as a divergence
"at step 8" pointing at the model). Oracle: tiny files written here with a NaN / inf planted at a
known row and column."""

import re

import numpy as np
import pytest

from iclr26_jax.qam.envs import ogbench_env as oe
from iclr26_jax.qam.envs import ogbench_generate as og

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
