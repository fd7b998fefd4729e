"""Progress display: plain lines, no bar frames, when not on a terminal."""

import io
import sys

from iclr26_jax.core import metrics as metrics_lib
from experiments import toy
from iclr26_jax.core import trainer


def test_plain_progress_names_each_phase_and_prints_the_end_once():
  out = io.StringIO()
  p = metrics_lib.Progress(total=10, initial=0, desc="toy", file=out, every_s=0.0)
  p.start(1)
  for s in range(2, 11):
    p.update(s)
  with p.phase("evaluating at step 10"):
    pass
  p.write("step 10 | loss 1")
  p.close()
  p.close()
  text = out.getvalue()
  lines = text.splitlines()
  assert "\r" not in text
  assert lines[0] == "toy: compiling the update step (the first step waits for it)..."
  assert lines[1].startswith("toy: compiled; first step done in ")
  assert "toy: evaluating at step 10..." in lines and "step 10 | loss 1" in lines
  assert sum(l.startswith("toy: step 10/10 (100%)") for l in lines) == 1  # not again at close


def test_trainer_progress_off_a_terminal_has_no_bar_frames(tmp_path, monkeypatch):
  err = io.StringIO()  # not a terminal
  monkeypatch.setattr(sys, "stderr", err)
  cfg = toy.default_config()
  cfg.update({"num_steps": 4, "log_every": 2, "checkpoint_every": 4, "batch_size": 16})
  cfg.toy.num_examples = 64
  trainer.train(toy.ToyRegression(cfg), cfg, str(tmp_path / "w"))
  text = err.getvalue()
  assert "\r" not in text and "compiling the update step" in text, text
  assert "evaluating at step 4..." in text and "first step done" in text
  assert text.count("step 4/4 (100%)") == 1, text
