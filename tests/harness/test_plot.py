"""Curves without code: a run finished by `python -m experiments.main` writes WORKDIR/curves.png,
and `python -m experiments.plot` draws any set of runs into one valid PNG (one panel per metric
group, runs overlaid)."""

import json
import os
import struct
import subprocess
import sys
import zlib

import pytest

from experiments import curves, plot
from experiments.configs.toy import regression
from experiments import toy
from iclr26_jax.core import trainer
from iclr26_jax.core import metrics as metrics_lib
from tests.conftest import REPO, subprocess_env

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _png_size(path):
  """(width, height) of a PNG after checking its signature and every chunk's CRC-32."""
  data = open(path, "rb").read()
  assert data[:8] == PNG_MAGIC, f"{path} is not a PNG"
  pos, size, kinds = 8, None, []
  while pos < len(data):
    (length,) = struct.unpack(">I", data[pos : pos + 4])
    kind = data[pos + 4 : pos + 8]
    body = data[pos + 8 : pos + 8 + length]
    (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
    assert zlib.crc32(kind + body) & 0xFFFFFFFF == crc, f"bad CRC in chunk {kind!r}"
    if kind == b"IHDR":
      size = struct.unpack(">II", body[:8])
    kinds.append(kind)
    pos += 12 + length
  assert kinds[0] == b"IHDR" and kinds[-1] == b"IEND" and b"IDAT" in kinds
  return size


@pytest.fixture(scope="module")
def toy_runs(tmp_path_factory):
  """Two finished toy runs (different learning rates) through the trainer, each given its
  end-of-run picture by ``write_run_curves`` (what ``experiments.main`` calls), switched on here
  (tests/conftest.py turns it off for the rest of the suite)."""
  root = tmp_path_factory.mktemp("runs")
  works = []
  mp = pytest.MonkeyPatch()
  mp.setenv(curves.ENV_SWITCH, "1")
  request_cleanup = mp.undo
  for lr in ("0.05", "0.005"):
    cfg = regression.get_config(
      f"smoke,num_steps=40,log_every=5,eval_every=20,checkpoint_every=40,batch_size=32,"
      f"progress_bar=False,optim.learning_rate={lr}"
    )
    work = str(root / f"lr{lr}")
    trainer.train(toy.ToyRegression(cfg), cfg, work)
    assert curves.write_run_curves(work) == os.path.join(work, curves.CURVES_FILE)
    works.append(work)
  request_cleanup()
  # Off: no picture.
  mp.setenv(curves.ENV_SWITCH, "0")
  cfg = regression.get_config("smoke,num_steps=5,log_every=5,checkpoint_every=5,progress_bar=False")
  trainer.train(toy.ToyRegression(cfg), cfg, str(root / "off"))
  assert curves.write_run_curves(str(root / "off")) is None
  mp.undo()
  assert not os.path.exists(root / "off" / curves.CURVES_FILE)
  assert os.path.exists(root / "off" / curves.METRICS_FILE)
  return works


def test_finished_run_writes_its_curves(toy_runs):
  for work in toy_runs:
    path = os.path.join(work, curves.CURVES_FILE)
    assert os.path.exists(path), "write_run_curves did not write curves.png"
    w, h = _png_size(path)
    assert w > 100 and h > 100


def test_the_command_line_run_writes_its_curves(tmp_path):
  work = tmp_path / "cli"
  proc = subprocess.run(
    [
      sys.executable,
      "-m",
      "experiments.main",
      "--config=experiments/configs/toy/regression.py:smoke,num_steps=10,log_every=5",
      f"--workdir={work}",
      "--config.progress_bar=False",
    ],
    cwd=REPO,
    capture_output=True,
    text=True,
    timeout=300,
    env=subprocess_env(**{curves.ENV_SWITCH: "1"}),
  )
  assert proc.returncode == 0, proc.stderr
  w, h = _png_size(work / curves.CURVES_FILE)
  assert w > 100 and h > 100


def test_cli_overlays_runs_into_one_png(toy_runs, tmp_path):
  out = str(tmp_path / "both.png")
  proc = subprocess.run(
    [sys.executable, "-m", "experiments.plot", *toy_runs, "--out", out],
    cwd=REPO,
    capture_output=True,
    text=True,
    env={**os.environ, "JAX_PLATFORMS": "cpu"},
  )
  assert proc.returncode == 0, proc.stderr
  assert proc.stdout.strip() == out
  w_all, _ = _png_size(out)
  # --keys narrows to one group: one panel, so a narrower picture than the 3-column grid.
  one = str(tmp_path / "train.png")
  assert plot.main([*toy_runs, "--keys", "train/loss", "--out", one]) == 0
  w_one, _ = _png_size(one)
  assert w_one < w_all


def test_cli_errors_name_the_problem(toy_runs, tmp_path, capsys):
  assert plot.main([str(tmp_path / "nowhere"), "--out", str(tmp_path / "x.png")]) == 2
  assert "no metrics file" in capsys.readouterr().err
  assert plot.main([toy_runs[0], "--keys", "nosuch/*", "--out", str(tmp_path / "x.png")]) == 2
  err = capsys.readouterr().err
  assert "no metric to plot" in err and "train/loss" in err
  assert not os.path.exists(tmp_path / "x.png")


def test_series_groups_and_log_scale_rule(tmp_path):
  # A hand-written metrics file: event lines, NaN and strings are skipped; groups are the
  # prefixes; a positive series over > 2 decades gets the log axis, one that crosses 0 does not.
  lines = [
    {"step": 1, "train/loss": 100.0, "eval/acc": 0.1, "grad_norm": -1.0, "note": "x"},
    {"step": 2, "event": "config_change"},
    {"step": 2, "train/loss": float("nan"), "grad_norm": 1.0},
    {"step": 3, "train/loss": 0.5, "eval/acc": 0.9},
  ]
  with open(tmp_path / "metrics.jsonl", "w") as f:
    for rec in lines:
      f.write(json.dumps(rec) + "\n")
  s = curves.read_series(str(tmp_path))
  assert s == {
    "train/loss": ([1, 3], [100.0, 0.5]),
    "eval/acc": ([1, 3], [0.1, 0.9]),
    "grad_norm": ([1, 2], [-1.0, 1.0]),
  }
  assert curves.group_keys(s) == [
    ("eval", ["eval/acc"]),
    ("grad_norm", ["grad_norm"]),
    ("train", ["train/loss"]),
  ]
  assert curves.spans_decades(s["train/loss"][1])  # 100 / 0.5 = 200 > 100
  assert not curves.spans_decades(s["eval/acc"][1])  # 9x
  assert not curves.spans_decades(s["grad_norm"][1])  # not positive
  assert curves.select_keys(s, ["train", "eval/*"]) == ["eval/acc", "train/loss"]
  with pytest.raises(ValueError, match="labels: got 2 names for 1 workdirs"):
    curves.plot_runs([str(tmp_path)], out=str(tmp_path / "p.png"), labels=["a", "b"])


def test_cut_last_line_is_skipped_with_a_note(tmp_path, capsys, caplog):
  """A metrics.jsonl whose last line was cut by a kill plots the records before it."""
  path = tmp_path / "metrics.jsonl"
  good = [{"step": s, "train/loss": 1.0 / s} for s in (1, 2, 3)]
  path.write_text("".join(json.dumps(r) + "\n" for r in good) + '{"step": 4, "train/lo')
  out = tmp_path / "c.png"
  with caplog.at_level("WARNING"):
    assert plot.main([str(tmp_path), "--out", str(out)]) == 0
  assert out.exists()
  assert any(f"{path}: skipped line 4, cut short" in r.getMessage() for r in caplog.records)
  assert metrics_lib.read_jsonl(str(path)) == good
  # A bad line before the last is damage, not a cut: named, not skipped.
  path.write_text('{"step": 1}\n{"ste\n{"step": 3}\n')
  with pytest.raises(ValueError, match=r"line 2: not a JSON record"):
    metrics_lib.read_jsonl(str(path))


def test_drawing_curves_leaves_the_matplotlib_backend_alone(tmp_path):
  """A notebook's inline backend must survive a trainer run that draws curves.png."""
  code = (
    "import matplotlib, json, os, sys\n"
    "matplotlib.use('svg')\n"
    "from experiments import curves\n"
    f"d = {str(tmp_path)!r}\n"
    "open(os.path.join(d, 'metrics.jsonl'), 'w').write(json.dumps({'step': 1, 'a/x': 1.0}) + '\\n')\n"
    "curves.plot_runs([d], out=os.path.join(d, 'c.png'))\n"
    "import matplotlib.pyplot as plt\n"
    "print(matplotlib.get_backend(), len(plt.get_fignums()))\n"
  )
  out = subprocess.run(
    [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120
  )
  assert out.returncode == 0, out.stderr
  assert out.stdout.split() == ["svg", "0"]
  assert os.path.exists(tmp_path / "c.png")


def _write_metrics(path, records):
  path.mkdir(parents=True, exist_ok=True)
  with open(path / "metrics.jsonl", "w") as f:
    for rec in records:
      f.write(json.dumps(rec) + "\n")
  return str(path)


@pytest.fixture
def full_and_smoke(tmp_path):
  """A long run whose loss falls 1 -> 0.05 (20x) under a decaying learning rate, and a smoke run
  whose loss stays near 10 (2x) at a constant learning rate: neither loss spans two decades on
  its own, together they span 10 / 0.05 = 200x. Both log the parameter count once; the eval
  accuracy is logged once per run, with different values."""
  full = [{"step": 0, "model/params": 12345}]
  for i in range(1, 101):
    full.append(
      {
        "step": i,
        "train/loss": 1.0 - 0.95 * (i - 1) / 99,
        "train/lr": 1e-3 - 9e-4 * (i - 1) / 99,
        "train/grad_norm": 1.0 + (i % 7) / 10,
      }
    )
  full.append({"step": 100, "eval/acc": 0.9})
  smoke = [{"step": 0, "model/params": 12345}]
  for i in range(1, 6):
    smoke.append({"step": i, "train/loss": 10.0 - (i - 1) * 1.25, "train/lr": 1e-3})
  smoke.append({"step": 5, "eval/acc": 0.5})
  return _write_metrics(tmp_path / "full", full), _write_metrics(tmp_path / "smoke", smoke)


def test_one_axis_per_key_log_over_all_runs_constants_as_text(full_and_smoke):
  fig = plot.draw(list(full_and_smoke))
  by_title = {ax.get_title(): ax for ax in fig.axes if ax.get_title()}
  # One panel per varying key (group, then key order), then the constants' text panel.
  assert [ax.get_title() for ax in fig.axes][:4] == [
    "train/grad_norm",
    "train/loss",
    "train/lr",
    "constants",
  ]
  assert all(not ax.get_title() and not ax.axison for ax in fig.axes[4:])  # unused grid cells
  # The loss and the learning rate live on different axes, each with one line per run.
  loss, lr = by_title["train/loss"], by_title["train/lr"]
  assert loss is not lr
  assert [ln.get_label() for ln in loss.get_lines()] == ["full", "smoke"]
  assert [ln.get_label() for ln in lr.get_lines()] == ["full", "smoke"]
  assert max(max(ln.get_ydata()) for ln in lr.get_lines()) <= 1e-3  # no loss value on lr's axis
  # Log axis: the loss over both runs spans 10 / 0.05 = 200x > 100x although each run alone
  # spans less (20x, 2x); the lr spans 10x and the grad norm 1.6x.
  assert loss.get_yscale() == "log"
  assert lr.get_yscale() == "linear" and by_title["train/grad_norm"].get_yscale() == "linear"
  # Constants are text, never a line: model/params (same in both runs) and eval/acc (logged once
  # per run, different values).
  for ax in fig.axes:
    for ln in ax.get_lines():
      assert 12345 not in list(ln.get_ydata()), ax.get_title()
  assert "model/params" not in by_title and "eval/acc" not in by_title
  const = by_title["constants"]
  assert not const.axison and not const.get_lines()
  text = "\n".join(t.get_text() for t in const.texts)
  assert text.splitlines() == ["eval/acc: full = 0.9, smoke = 0.5", "model/params = 12345"]


def test_single_run_constant_lr_and_cli_png(full_and_smoke, tmp_path):
  """In one run alone the constant learning rate is text, not a flat line, and the loss (20x)
  keeps a linear axis."""
  _, smoke = full_and_smoke
  fig = plot.draw([smoke], labels=["s"])
  titles = [ax.get_title() for ax in fig.axes]
  assert titles == ["train/loss", "constants"]
  loss = fig.axes[0]
  assert loss.get_yscale() == "linear" and loss.get_legend() is None  # one run: no legend
  text = fig.axes[1].texts[0].get_text()
  assert text.splitlines() == ["eval/acc = 0.5", "model/params = 12345", "train/lr = 0.001"]
  # --keys picks a constant only: the picture is the text panel alone.
  fig = plot.draw([smoke], keys=["model"])
  assert [ax.get_title() for ax in fig.axes] == ["constants"]
  out = tmp_path / "both.png"
  assert plot.main([*full_and_smoke, "--out", str(out)]) == 0
  w, h = _png_size(out)
  assert w > 3 * h / 2  # three panels wide, two rows
