r"""Benchmark: the lmKAN spline-lookup kernels against the XLA reference and a same-shape dense matmul.

lmKAN (Pozdnyakov & Schwaller, ICLR 2026; reference CUDA kernels github.com/schwallergroup/lmkan, which
run at about 8–10x the time of a same-shape f32 linear layer on H100, independent of G). For every
batch B, layer N_in -> N_out and grid size G this script times, in the same run, the forward and the
forward+backward (value and gradient of Σ y² w.r.t. x and the table) of

  * mgpu:     `spline_lookup(impl="pallas")` on a GPU: the production GPU rows, the Mosaic GPU kernels
              (`kernel_mgpu.py`: the sparse lookup with uniform row loads, owner-computes dT; compute
              capability >= 9.0);
  * portable: `spline_lookup(impl="pallas")` on a TPU: the interpolation-matrix kernels, the
              production TPU rows (chosen by the per-unit roofline estimate printed below);
  * gather:   the TPU lane-gather forward and dx with the owner-computes dT (`variant="gather"`,
              the rows of `blocks.ALTERNATIVE_TABLE["tpu"]`);
  * triton-gather, triton-gather+atomic, triton-portable: GPU only, the Pallas Triton kernels
              (deprecated backend; comparison rows, never the default): the gather forward and dx
              with the owner-computes or the atomic dT (the rows of `blocks.ALTERNATIVE_TABLE["gpu"]`),
              and the interpolation-matrix kernels with the same blocks;
  * xla:      `spline_lookup(impl="xla")`, the pure-jnp gather reference with the closed-form backward;
  * xla-hat:  `reference.spline_lookup_dense`, the dense hat-matrix reference (plain autodiff), only
              where its B·P·(G+1)² intermediates stay below 2²⁶ elements;
  * dense:    x (B, N_in) @ W (N_in, N_out) in f32 at HIGHEST precision (the linear layer of the same
              shape; its backward computes dx and dW),

and prints each time, its ratio to dense, and the effective table-read bandwidth of the lookup:
4 corners · B · P · N_out · 4 bytes per forward (what a sparse lookup must read; the portable kernels
read whole table tiles instead, so for them this is a "useful bytes" rate). On GPU the roofline line is
the Mosaic GPU forward's, from its compiled loop counted per unit (`_roofline.SPLINE_MGPU_FWD_SASS`).

Shapes: B ∈ {4096, 65536}, 128 -> 128 and 512 -> 512, G ∈ {8, 10, 26}. On CPU only the reference paths
run (kernels would run in interpret mode, whose timings mean nothing); `--quick` uses tiny shapes
(B = 256, 16 -> 16, G ∈ {8, 26}). Kernel variants that fail to compile on the device are reported as
failures with the error's first line, and the run continues; the kernels' first-use self-check runs
strict (`ICLR26_KERNEL_SELFCHECK`, unless set), so a kernel that fails it is such a failure, never
the XLA fallback timed under the kernel's name.

Run from the repository root:
  python -m benchmarks.spline_lookup --quick
  python -m benchmarks.spline_lookup                   # full grid (GPU/TPU: all paths)
  python -m benchmarks.spline_lookup --batches=65536 --layers=512 --grids=26
"""

from __future__ import annotations

import dataclasses
import os
import sys
import types

if __package__ in (None, ""):  # run as a file: make the repository root importable
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app, flags  # pylint: disable=g-import-not-at-top

from experiments import _cli  # pylint: disable=g-import-not-at-top
from benchmarks import _roofline  # pylint: disable=g-import-not-at-top
from benchmarks._timing import median_time  # pylint: disable=g-import-not-at-top
import jax  # pylint: disable=g-import-not-at-top
import jax.numpy as jnp
import numpy as np

from kernels_pallas import _backend
from kernels_pallas import _selfcheck
from kernels_pallas.spline_lookup import blocks
from kernels_pallas.spline_lookup import ops
from kernels_pallas.spline_lookup import reference
from kernels_pallas.spline_lookup.grid import SigmaGrid


def _ints(s: str):
  return tuple(int(v) for v in s.split(",") if v)


_HAT_LIMIT = 1 << 26


def _paths(platform: str, G: int, b: int, p: int):
  """(name, spline_lookup kwargs or None for the hat-matrix form) of every path to time here."""
  out = [("xla", dict(impl="xla"))]
  if b * p * (G + 1) ** 2 <= _HAT_LIMIT:
    out.append(("xla-hat", None))
  if platform == "tpu":
    gather = blocks.table_row("tpu", G, variant="gather").config
    out[:0] = [
      ("portable", dict(impl="pallas", platform="tpu")),
      ("gather", dict(impl="pallas", platform="tpu", block_sizes=gather)),
    ]
  elif platform == "gpu":
    # The production GPU row (Mosaic GPU; named, so the label is what runs), then the Triton
    # kernels: the gather row of this G (ALTERNATIVE_TABLE["gpu"]), its atomic-dT form, and the
    # interpolation-matrix kernels with the same blocks.
    mgpu = blocks.table_row("gpu", G, variant="mgpu").config
    gather = blocks.table_row("gpu", G, variant="gather").config
    out[:0] = [
      ("mgpu", dict(impl="pallas", platform="gpu", block_sizes=mgpu)),
      ("triton-gather", dict(impl="pallas", platform="gpu", block_sizes=gather)),
      (
        "triton-gather+atomic",
        dict(
          impl="pallas", platform="gpu", block_sizes=dataclasses.replace(gather, dtable="atomic")
        ),
      ),
      (
        "triton-portable",
        dict(
          impl="pallas",
          platform="gpu",
          block_sizes=dataclasses.replace(gather, variant="portable"),
        ),
      ),
    ]
  return out


def _time_path(fn_f, fn_fb, args, warmup, reps):
  try:
    return (
      median_time(fn_f, *args, warmup=warmup, reps=reps),
      median_time(fn_fb, *args, warmup=warmup, reps=reps),
      None,
    )
  except Exception as e:  # pylint: disable=broad-except  (report and continue with other paths)
    return None, None, f"{type(e).__name__}: {str(e).splitlines()[0][:100]}"


def tpu_forward_estimate_lines(G: int, b: int, p: int, q: int) -> list[str]:
  """The TPU v5e per-unit roofline estimates of both forward forms, each with its own table row's
  batch block, and the variant the production table picks (estimates, not measurements: the
  gather form's figure rests on the third-party cross-lane rate of `_roofline.UNIT_RATES`)."""
  c_pad = blocks.corner_pad(G)
  bbs = {
    v: blocks.plan("tpu", G, b, p, q, blocks.table_row("tpu", G, variant=v).config).config.fwd_bb
    for v in ("portable", "gather")
  }
  times = _roofline.spline_tpu_forward_times(b, p, q, G, c_pad, bbs["portable"], bbs["gather"])
  names = {"memory": "HBM", "compute": "MXU", "valu": "VALU", "xlane": "cross-lane"}
  what = {
    "portable": f"matrix form (C_pad={c_pad}, 3 bf16 MXU passes per f32 dot)",
    "gather": "lane-gather form (12 cross-lane ops per 128-corner chunk)",
  }
  lines = []
  for v, t in times.items():
    bound = max(t, key=t.get)
    units = ", ".join(f"{names[u]} {s * 1e3:.3g}" for u, s in t.items() if s)
    lines.append(
      f"TPU v5e estimate G={G} {v}: {what[v]}, bb={bbs[v]}: >= {t[bound] * 1e3:.3g} ms "
      f"({names[bound]}; ms by unit: {units})"
    )
  chosen = blocks.table_row("tpu", G).config.variant
  here = _roofline.spline_tpu_choice(b, p, q, G, c_pad, bbs["portable"], bbs["gather"])
  lines.append(
    f"TPU table row for G={G} (chosen by this estimate at B = 4096, 512 -> 512): {chosen}; "
    f"the smaller estimate at this shape: {here}"
  )
  return lines


NAMES = ("batches", "layers", "grids", "warmup", "reps", "quick")


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
  """Defines this tool's flags in ``fv`` (called only when the file is the program)."""
  flags.DEFINE_string("batches", "4096,65536", "Comma-separated batch sizes B.", flag_values=fv)
  flags.DEFINE_string(
    "layers", "128,512", "Comma-separated square layer widths N_in = N_out.", flag_values=fv
  )
  flags.DEFINE_string(
    "grids", "8,10,26", "Comma-separated grid sizes G (each >= 3).", flag_values=fv
  )
  flags.DEFINE_integer("warmup", 2, "Warm-up calls before timing.", lower_bound=0, flag_values=fv)
  flags.DEFINE_integer("reps", 10, "Timed calls (median reported).", lower_bound=1, flag_values=fv)
  flags.DEFINE_bool("quick", False, "Tiny shapes, a few repetitions.", flag_values=fv)


def main(argv, fv: flags.FlagValues = flags.FLAGS):
  _cli.no_arguments(argv)
  args = types.SimpleNamespace(**_cli.values(fv, NAMES))
  # A kernel that fails its first-use self-check would fall back to the XLA path and be timed
  # under the kernel's name: strict makes it a reported failure instead (unless the caller chose).
  os.environ.setdefault(_selfcheck.ENV, "strict")
  if args.quick:
    args.batches, args.layers, args.grids, args.reps, args.warmup = "256", "16", "8,26", 3, 1
  try:
    batches, layers, grids = _ints(args.batches), _ints(args.layers), _ints(args.grids)
  except ValueError as e:
    raise app.UsageError(f"--batches, --layers, --grids: {e}") from None
  if not (batches and layers and grids) or min(batches + layers) < 1 or min(grids) < 3:
    raise app.UsageError("batches and layers must be >= 1, grids >= 3")

  platform = _backend.backend()
  print(
    f"backend={platform} device={jax.devices()[0].device_kind} reps={args.reps} (median); "
    f"ratios are time / dense (same-shape f32 matmul); BW = 4·B·P·N_out·4 bytes / fwd time"
  )
  header = (
    f"{'B':>6} {'layer':>9} {'G':>3} {'path':<20} {'fwd ms':>9} {'f+b ms':>9} "
    f"{'fwd/dense':>9} {'f+b/dense':>9} {'BW GB/s':>8}"
  )
  print(header)
  print("-" * len(header))
  rng = np.random.default_rng(0)
  for b in batches:
    for n in layers:
      p, q = (n + 1) // 2, n
      x2 = jnp.asarray(rng.standard_normal((b, n)), jnp.float32)
      w = jnp.asarray(rng.standard_normal((n, q)) / np.sqrt(n), jnp.float32)
      dense = lambda x, w: jnp.dot(x, w, precision=jax.lax.Precision.HIGHEST)
      d_f = jax.jit(dense)
      d_fb = jax.jit(jax.value_and_grad(lambda x, w: jnp.sum(dense(x, w) ** 2), argnums=(0, 1)))
      t_df, t_dfb, _ = _time_path(d_f, d_fb, (x2, w), args.warmup, args.reps)
      print(
        f"{b:>6} {f'{n}->{q}':>9} {'':>3} {'dense':<20} {1e3 * t_df:>9.3f} {1e3 * t_dfb:>9.3f} "
        f"{1.0:>9.2f} {1.0:>9.2f} {'':>8}"
      )
      xp = x2.reshape(b, p, 2)
      for G in grids:
        grid = SigmaGrid(G)
        table = jnp.asarray(rng.uniform(-0.1, 0.1, (p, G + 1, G + 1, q)), jnp.float32)
        for name, kw in _paths(platform, G, b, p):
          if kw is None:
            f = lambda x, t: reference.spline_lookup_dense(x, t, grid)
          else:
            f = lambda x, t, kw=kw: ops.spline_lookup(x, t, grid, **kw)
          fn_f = jax.jit(f)
          fn_fb = jax.jit(
            jax.value_and_grad(lambda x, t, f=f: jnp.sum(f(x, t) ** 2), argnums=(0, 1))
          )
          t_f, t_fb, err = _time_path(fn_f, fn_fb, (xp, table), args.warmup, args.reps)
          if err:
            print(f"{b:>6} {f'{n}->{q}':>9} {G:>3} {name:<20} failed: {err}")
            continue
          bw = 4 * b * p * q * 4 / t_f / 1e9
          print(
            f"{b:>6} {f'{n}->{q}':>9} {G:>3} {name:<20} {1e3 * t_f:>9.3f} {1e3 * t_fb:>9.3f} "
            f"{t_f / t_df:>9.2f} {t_fb / t_dfb:>9.2f} {bw:>8.1f}"
          )
        nbytes = _roofline.spline_bytes(b, p, q, G)
        # The GPU forward (Mosaic GPU): no matrix-unit FLOPs; its 8 FLOPs per (sample, pair,
        # output) are FP32 FMAs, counted with the rest of its compiled loop per unit.
        mgpu_ops = {"H200": _roofline.spline_mgpu_forward_unit_ops(b, p, q)}
        label = f"G={G} mgpu forward (H200, compiled SASS per unit)"
        print("    " + _roofline.line(label, nbytes, 0.0, mgpu_ops, devices=("H200",)))
        for line in tpu_forward_estimate_lines(G, b, p, q):
          print("    " + line)


if __name__ == "__main__":
  define_flags()
  _cli.run(main)
