"""The one-command device check (experiments/bench/device_check.py) on a CPU host: tiny shapes,
kernels in interpret mode, one block row per op. On a GPU/TPU host the same command runs every row
compiled at the benchmark shapes."""

from absl import flags
import jax

from experiments.bench import device_check


def test_device_check_tiny_interpret_writes_table(tmp_path):
  out = tmp_path / "check.md"
  fv = flags.FlagValues()
  device_check.define_flags(fv)
  argv = fv(
    ["device_check", "--tiny", f"--out={out}", "--bitplane_rows=decode", "--spline_rows=small"]
    + ["--reps=1"]
  )
  device_check.main(argv, fv)
  text = out.read_text()
  assert device_check.HEADER in text
  if jax.default_backend() == "cpu":
    assert "interpret mode" in text
  rows = [
    l
    for l in text.splitlines()
    if l.startswith("| bitplane_matmul") or l.startswith("| spline_lookup")
  ]
  assert len(rows) == 3  # decode at p = 2 and p = 4, spline G = 8
  for row in rows:
    err = float(row.split("|")[4])
    assert 0.0 <= err < 1e-4, row  # kernel vs reference, relative to the error scale
