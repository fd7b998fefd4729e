r"""Benchmark: the lmKAN layer against dense layers, in the same run.

lmKAN (Pozdnyakov & Schwaller, ICLR 2026; reference CUDA kernels github.com/schwallergroup/lmkan, whose
README reports about 8–10x the time of a same-shape f32 linear layer on H100). This script times the
forward and forward+backward passes of

  * `LMKANDense(N_out, grid_size=G, impl=...)`  (default impl "xla": the pure-jnp reference),
  * `nn.Dense(N_out)`      — the same shape (half the lmKAN FLOPs),
  * `nn.Dense(2·N_out)`    — FLOP-matched (2·N_in·2N_out = 4·N_in·N_out, the lmKAN lookup count),

all without bias, and prints a table with the time ratios against the same-shape Dense layer and the
effective table-read bandwidth of the lookup (4 corners · B · P · Q values per forward).

Run from the repository root:
  python -m benchmarks.lmkan_layer --quick
  python -m benchmarks.lmkan_layer --batch 16384 --n_in 512 --n_out 512 --grid_size 8
"""

from __future__ import annotations

import os
import sys
import types

if __package__ in (None, ""):  # run as a file: make the repository root importable
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import flags  # pylint: disable=g-import-not-at-top

from experiments import _cli  # pylint: disable=g-import-not-at-top
import flax.linen as nn  # pylint: disable=g-import-not-at-top
from benchmarks._timing import median_time  # pylint: disable=g-import-not-at-top
import jax
import jax.numpy as jnp
import numpy as np

from iclr26_jax.lmkan import flops as lmkan_flops
from iclr26_jax.lmkan.layer import LMKANDense, resolve_impl


def _bench_module(module, x, warmup, reps):
  params = module.init(jax.random.key(0), x)
  fwd = jax.jit(module.apply)

  def loss(p, xx):
    return jnp.sum(module.apply(p, xx) ** 2)

  fwd_bwd = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))
  t_f = median_time(fwd, params, x, warmup=warmup, reps=reps)
  t_fb = median_time(fwd_bwd, params, x, warmup=warmup, reps=reps)
  n_params = sum(int(np.prod(a.shape)) for a in jax.tree_util.tree_leaves(params))
  return t_f, t_fb, n_params


NAMES = ("batch", "n_in", "n_out", "grid_size", "impl", "warmup", "reps", "quick")


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
  """Defines this tool's flags in ``fv`` (called only when the file is the program)."""
  flags.DEFINE_integer("batch", 4096, "B, rows of the input.", lower_bound=1, flag_values=fv)
  flags.DEFINE_integer("n_in", 256, "N_in, input features.", lower_bound=1, flag_values=fv)
  flags.DEFINE_integer("n_out", 256, "N_out, output features.", lower_bound=1, flag_values=fv)
  flags.DEFINE_integer("grid_size", 8, "G, spline grid size of the lmKAN layer.", flag_values=fv)
  flags.DEFINE_enum(
    "impl", "xla", ["auto", "xla", "pallas"], "lmKAN lookup implementation.", flag_values=fv
  )
  flags.DEFINE_integer("warmup", 2, "Warm-up calls before timing.", lower_bound=0, flag_values=fv)
  flags.DEFINE_integer("reps", 10, "Timed calls (median reported).", lower_bound=1, flag_values=fv)
  flags.DEFINE_bool("quick", False, "Tiny sizes, a few repetitions.", flag_values=fv)


def main(argv, fv: flags.FlagValues = flags.FLAGS):
  _cli.no_arguments(argv)
  args = types.SimpleNamespace(**_cli.values(fv, NAMES))
  if args.quick:
    args.batch, args.n_in, args.n_out, args.reps, args.warmup = 256, 32, 32, 3, 1

  impl = resolve_impl(args.impl)
  if impl == "pallas" and jax.default_backend() == "cpu":
    print("note: on CPU the Pallas path runs in interpret mode; its times mean nothing")
  b, n_in, n_out, g = args.batch, args.n_in, args.n_out, args.grid_size
  x = jax.random.normal(jax.random.key(1), (b, n_in), jnp.float32)
  print(
    f"backend={jax.default_backend()} device={jax.devices()[0].device_kind} "
    f"B={b} N_in={n_in} N_out={n_out} G={g} impl={impl} reps={args.reps} (median)"
  )

  rows = [
    ("lmKAN", LMKANDense(n_out, grid_size=g, impl=impl), lmkan_flops.lmkan_flops(n_in, n_out)),
    ("Dense same shape", nn.Dense(n_out, use_bias=False), lmkan_flops.linear_flops(n_in, n_out)),
    (
      "Dense FLOP-matched",
      nn.Dense(2 * n_out, use_bias=False),
      lmkan_flops.linear_flops(n_in, 2 * n_out),
    ),
  ]
  results = []
  for name, module, fl in rows:
    t_f, t_fb, n_params = _bench_module(module, x, args.warmup, args.reps)
    results.append((name, fl, n_params, t_f, t_fb))

  ref_f, ref_fb = results[1][3], results[1][4]
  header = (
    f"{'layer':<20} {'FLOPs/sample':>12} {'params':>10} {'fwd ms':>9} {'fwd+bwd ms':>11} "
    f"{'fwd/Dense':>9} {'f+b/Dense':>9}"
  )
  print(header)
  print("-" * len(header))
  for name, fl, n_params, t_f, t_fb in results:
    print(
      f"{name:<20} {fl:>12,d} {n_params:>10,d} {1e3 * t_f:>9.3f} {1e3 * t_fb:>11.3f} "
      f"{t_f / ref_f:>9.2f} {t_fb / ref_fb:>9.2f}"
    )
  p = (n_in + 1) // 2
  reads = 4 * b * p * n_out * 4  # bytes of table values read by the lookup (f32)
  print(
    f"lmKAN effective table-read bandwidth (fwd): {reads / results[0][3] / 1e9:.2f} GB/s; "
    f"per-pair overhead {lmkan_flops.lmkan_overhead(n_in)[0]:,d} FLOPs/sample (not in FLOPs/sample)"
  )


if __name__ == "__main__":
  define_flags()
  _cli.run(main)
