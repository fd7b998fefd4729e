"""The AnyBCQ command-line tools: help for every flag, progress while they work, results in a file
as well as on stdout."""

import json

import pytest

from iclr26_jax.anybcq import lm, minilm


@pytest.mark.parametrize("module", [lm, minilm])
def test_every_flag_has_help(module, capsys):
  with pytest.raises(SystemExit):
    module.main(["--help"])
  text = capsys.readouterr().out
  flags = [w for w in text.split() if w.startswith("--") and w not in ("--help",)]
  assert "--out" in text and flags
  # argparse prints "--flag FLAG  help" or "--flag  help"; a flag without help text has no
  # description after it, so every option line must carry words beyond its own name.
  options = text.split("options:")[-1]
  entries = [e for e in options.split("\n  --")[1:]]
  assert entries
  for e in entries:
    name, *rest = e.split(None, 2)
    assert len(e.split()) >= 3, f"--{name} has no help text"


def test_lm_cli_progress_and_results_file(tmp_path, capsys, monkeypatch):
  # The CLI's plumbing (progress, table, files), not the quantizers (tested on their own): the
  # quantizer is replaced by the identity, which keeps each width's perplexity equal to FP.
  monkeypatch.setattr(lm, "quantize_lm", lambda params, m, bits, *a: {p: params for p in bits})
  out = tmp_path / "res" / "lm"
  lm.main(["--steps=2", "--width=16", "--depth=1", "--heads=2", "--context=16", "--rounds=1",
           "--group_size=16", f"--out={out}"])
  cap = capsys.readouterr()
  assert "training 2 steps" in cap.err and "rtn: quantizing" in cap.err and "done; wrote" in cap.err
  table = (tmp_path / "res" / "lm.md").read_text()
  assert table.strip() in cap.out  # the same table on stdout and in the file
  rec = json.loads((tmp_path / "res" / "lm.json").read_text())
  assert set(rec["perplexity"]) == set(lm.METHODS) and rec["fp"] > 1.0
  assert set(rec["perplexity"]["anybcq"]) == {"2", "3", "4"}
  assert rec["perplexity"]["rtn"]["2"] == pytest.approx(rec["fp"], rel=1e-6)


def test_minilm_results_file(tmp_path):
  minilm._write_results(str(tmp_path / "a" / "m"), "| t |", {"results": {"rtn": {2: {"x": 1.0}}}})
  assert (tmp_path / "a" / "m.md").read_text() == "| t |\n"
  assert json.loads((tmp_path / "a" / "m.json").read_text())["results"]["rtn"]["2"]["x"] == 1.0


def test_quantize_kernels_reports_progress_per_kernel():
  import jax.numpy as jnp
  params = {"params": {"a": {"kernel": jnp.ones((4, 3))}, "b": {"kernel": jnp.ones((4, 2))}}}
  seen = []
  lm.quantize_kernels(params, [("a",), ("b",)], "rtn", (2,), group_size=4,
                      progress=lambda i, n: seen.append((i, n)))
  assert seen == [(1, 2), (2, 2)]
