"""The one-command device check (benchmarks/device_check.py) on a CPU host: ``--tiny
--methods`` runs every method's smoke step and one block row per kernel op, in interpret mode, each row
in a worker subprocess. On a GPU/TPU host the same command runs the paper-scale steps and every
kernel row compiled at the benchmark shapes."""

from absl import flags
import jax

from benchmarks import device_check


def _rows(text, prefix):
  return [line for line in text.splitlines() if line.startswith(prefix)]


def test_device_check_tiny_methods_writes_a_row_per_method(tmp_path):
  out = tmp_path / "check.md"
  fv = flags.FlagValues()
  device_check.define_flags(fv)
  argv = fv(
    ["device_check", "--tiny", "--methods", f"--out={out}", "--reps=1"]
    + [f"--method_rows={','.join(device_check.METHODS)}"]
    + ["--bitplane_rows=decode", "--spline_rows=small"]
  )
  device_check.main(argv, fv)
  text = out.read_text()
  assert device_check.METHOD_HEADER in text and device_check.HEADER in text
  if jax.default_backend() == "cpu":
    assert "interpret mode" in text
  plan = {r["method"]: r for r in device_check._plan_records() if r["target"] == "h200x1"}
  for name in device_check.METHODS:
    (line,) = _rows(text, f"| {name} |")
    cells = [c.strip() for c in line.split("|")[1:-1]]
    assert "error" not in line and "**" not in line, line
    assert float(cells[3]) > 0 and float(cells[4]) > 0, line  # compile s, measured step ms
    est_ms = plan[name]["est_step_s"] * 1e3  # the plan's h200x1 estimate sits beside it
    assert f"{est_ms:.3g}" in cells[5], (line, est_ms)
    assert "finite" in cells[8] and "non-finite" not in cells[8], line
  kernel_rows = _rows(text, "| bitplane_matmul") + _rows(text, "| spline_lookup")
  assert len(kernel_rows) == 3  # decode at p = 2 and p = 4, spline G = 8
  for row in kernel_rows:
    err = float(row.split("|")[4])
    assert 0.0 <= err < 1e-4, row  # kernel vs reference, relative to the error scale


def test_failing_and_slow_rows_cost_only_themselves(tmp_path):
  """A row that hangs past its limit, one that kills its worker and one that raises are each
  recorded, and the rows after them still run (each in a fresh worker)."""
  out = tmp_path / "iso.md"
  rows = ["_hang:3", "_crash:", "method:nosuch", "method:toy"]
  lines, results = device_check.run(rows, tiny=True, out=str(out), echo=False)
  by_row = {r["row"]: r for r in results}
  assert "timed out after 3 s" in by_row["_hang:3"]["error"]
  assert "worker died (exit 3)" in by_row["_crash:"]["error"]
  assert "nosuch" in by_row["nosuch"]["error"]
  assert "error" not in by_row["toy"] and by_row["toy"]["step_s"] > 0
  assert out.read_text().splitlines() == lines  # written row by row as they finished


def test_gpu_rows_are_the_mosaic_gpu_kernels_then_named_triton_rows():
  """On a Hopper GPU the default kernel rows are the Mosaic GPU kernels (bit-plane LUT and wgmma,
  spline mgpu), then the Triton kernels as explicitly named comparison rows, last (a spent budget
  skips them first); each Triton row resolves to a Triton variant of its table."""
  rows = device_check.default_rows(
    methods=False, kernels=True, tiny=False, platform="gpu", lut=True, wgmma=True, mgpu=True,
    triton=True,
  )  # fmt: skip
  triton = [r for r in rows if ":triton-" in r]
  assert rows[: len(rows) - len(triton)] == [
    "bitplane:lut", "bitplane:decode", "bitplane:small", "bitplane:prefill",
    "spline:small", "spline:medium", "spline:large", "spline:huge",
  ]  # fmt: skip
  assert triton and rows[-len(triton) :] == triton
  for row in triton:
    kind, _, bucket = row.partition(":")
    if kind == "bitplane":
      _, cfg = device_check._bitplane_kernel("gpu", bucket, tiny=False)
      assert cfg.variant in ("partials", "dequant"), (row, cfg)
    else:
      _, cfg = device_check._spline_kernel("gpu", bucket)
      assert cfg.variant == "gather", (row, cfg)
  # Without Hopper's kernels only the Triton rows remain; a TPU host gets its Mosaic TPU rows.
  ampere = device_check.default_rows(
    methods=False, kernels=True, tiny=False, platform="gpu", triton=True
  )
  assert ampere == triton
  assert device_check._bitplane_kernel("gpu", "decode", tiny=False) == (16, None)
  assert device_check._spline_kernel("tpu", "small") == (8, None)
