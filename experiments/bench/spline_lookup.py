r"""Benchmark: the lmKAN spline-lookup kernels against the XLA reference and a same-shape dense matmul.

lmKAN (Pozdnyakov & Schwaller, ICLR 2026; reference CUDA kernels github.com/schwallergroup/lmkan, which
run at about 8–10x the time of a same-shape f32 linear layer on H100, independent of G). For every
batch B, layer N_in -> N_out and grid size G this script times, in the same run, the forward and the
forward+backward (value and gradient of Σ y² w.r.t. x and the table) of

  * portable: `spline_lookup(impl="pallas")` with the interpolation-matrix kernels (TPU and GPU; the
              production TPU rows, chosen by the per-unit roofline estimate printed below);
  * gather:   the gather forward and dx with the owner-computes dT (Triton pointer gathers on GPU,
              the production GPU rows; Mosaic lane gathers on TPU, `variant="gather"` with the
              rows of `blocks.ALTERNATIVE_TABLE`);
  * gather+atomic: the same with the atomic table gradient (GPU only);
  * xla:      `spline_lookup(impl="xla")`, the pure-jnp gather reference with the closed-form backward;
  * xla-hat:  `reference.spline_lookup_dense`, the dense hat-matrix reference (plain autodiff), only
              where its B·P·(G+1)² intermediates stay below 2²⁶ elements;
  * dense:    x (B, N_in) @ W (N_in, N_out) in f32 at HIGHEST precision (the linear layer of the same
              shape; its backward computes dx and dW),

and prints each time, its ratio to dense, and the effective table-read bandwidth of the lookup:
4 corners · B · P · N_out · 4 bytes per forward (what a sparse lookup must read; the portable kernels
read whole table tiles instead, so for them this is a "useful bytes" rate).

Shapes: B ∈ {4096, 65536}, 128 -> 128 and 512 -> 512, G ∈ {8, 10, 26}. On CPU only the reference paths
run (kernels would run in interpret mode, whose timings mean nothing); `--quick` uses tiny shapes
(B = 256, 16 -> 16, G ∈ {8, 26}). Kernel variants that fail to compile on the device are reported as
failures with the error's first line, and the run continues.

Run from the repository root:
  python -m experiments.bench.spline_lookup --quick
  python -m experiments.bench.spline_lookup                   # full grid (GPU/TPU: all paths)
  python -m experiments.bench.spline_lookup --batches=65536 --layers=512 --grids=26
"""

from __future__ import annotations

import dataclasses
import os
import sys
import types

if __package__ in (None, ""):  # run as a file: make the repository root importable
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from absl import app, flags  # pylint: disable=g-import-not-at-top

from experiments import _cli  # pylint: disable=g-import-not-at-top
from experiments.bench import _roofline  # pylint: disable=g-import-not-at-top
from experiments.bench._timing import median_time  # pylint: disable=g-import-not-at-top
import jax  # pylint: disable=g-import-not-at-top
import jax.numpy as jnp
import numpy as np

from kernels_pallas import _backend
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
    row = blocks.table_row("gpu", G).config
    portable = dataclasses.replace(
      blocks.table_row("gpu", 8).config, dt_bb=row.dt_bb, num_warps=row.num_warps
    )
    gather = dataclasses.replace(blocks.table_row("gpu", 26).config)
    out[:0] = [
      ("portable", dict(impl="pallas", platform="gpu", block_sizes=portable)),
      ("gather", dict(impl="pallas", platform="gpu", block_sizes=gather)),
      (
        "gather+atomic",
        dict(
          impl="pallas", platform="gpu", block_sizes=dataclasses.replace(gather, dtable="atomic")
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
    f"{'B':>6} {'layer':>9} {'G':>3} {'path':<14} {'fwd ms':>9} {'f+b ms':>9} "
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
        f"{b:>6} {f'{n}->{q}':>9} {'':>3} {'dense':<14} {1e3 * t_df:>9.3f} {1e3 * t_dfb:>9.3f} "
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
            print(f"{b:>6} {f'{n}->{q}':>9} {G:>3} {name:<14} failed: {err}")
            continue
          bw = 4 * b * p * q * 4 / t_f / 1e9
          print(
            f"{b:>6} {f'{n}->{q}':>9} {G:>3} {name:<14} {1e3 * t_f:>9.3f} {1e3 * t_fb:>9.3f} "
            f"{t_f / t_df:>9.2f} {t_fb / t_dfb:>9.2f} {bw:>8.1f}"
          )
        nbytes = _roofline.spline_bytes(b, p, q, G)
        flops = _roofline.spline_gather_flops(b, p, q)
        print("    " + _roofline.line(f"G={G} gather form (GPU kernels)", nbytes, flops))
        for line in tpu_forward_estimate_lines(G, b, p, q):
          print("    " + line)


if __name__ == "__main__":
  define_flags()
  _cli.run(main)
