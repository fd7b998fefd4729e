r"""Vector-op counts of the TPU kernels' hot loops in libtpu's final LLO, on a host without a chip.

libtpu compiles a Mosaic kernel through ~18 passes down to LLO, the TPU's low-level op set; with
``LIBTPU_INIT_ARGS=--xla_mosaic_dump_to=DIR`` it writes each pass's module, the last one
(``*post-finalize-llo.txt``) holding the vector ops the chip will issue. This tool compiles one kernel
case ahead of time (``_targets.compile_for_tpu``: a v5e or v6e device from
``jax.experimental.topologies``), finds the innermost loop that carries the case's work (the bit-plane
kernel's plane loop: the loop with the MXU pushes; the spline forward's output-tile loop: the loop
with the lane permutes) and counts its ops by unit:

* ``valu``: vector ALU ops (integer and float arithmetic, logic, shifts, compares, selects, packing,
  conversions, sublane rotates and reductions), the work the roofline's vector bound counts;
* ``permute``: cross-lane ops (``vsetperm`` / ``vperm`` / ``vpermres``: a lane gather);
* ``mxu``: matrix-unit pushes and pops (``vlatch``, ``vmatmul``, ``vmatres``, ``vdwg``);
* ``load`` / ``store``: VMEM vector loads and stores; ``vbitcast`` (a reinterpretation) is not counted.

Each op works on one (8, 128) 32-bit vreg, so the per-element figures are ops × 1024 / elements per
loop iteration: weight-planes (bk · bn) for the decode kernel, (sample, pair, output) triples (tq · 128)
for the spline forward. These are compiled op counts, not a schedule: how many of them issue per cycle
is the (assumed) vector rate of ``_roofline.VECTOR_OPS``.

Cases: ``decode_bf16`` / ``decode_f32`` (bit-plane matmul, M = 1, K = N = 1024, g = 128, float16
scales, p = 2 of planes (2, 3, 4); the production decode row: bk = bn = 1024), ``spline_fwd`` (spline
lookup forward, G = 8 and G = 12, B = 2048, 8 pairs, Q = 512, the TPU lane-gather kernels:
``variant="gather"``, the row of ``blocks.table_row("tpu", G, variant="gather")``).

  python -m benchmarks.tpu_llo --case=decode_bf16 [--target=v6e] [--json]

libtpu reads ``LIBTPU_INIT_ARGS`` once, when it loads, so each run is its own process (the compile
tier runs this module in a subprocess).
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile

if __package__ in (None, ""):  # run as a file: make the repository root importable
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import flags  # pylint: disable=g-import-not-at-top

from experiments import _cli  # pylint: disable=g-import-not-at-top

CASES = ("decode_bf16", "decode_f32", "spline_fwd_g8", "spline_fwd_g12")
NOT_COUNTED = {"vbitcast"}
UNITS = {
  "permute": {"vsetperm", "vperm", "vpermres"},
  "mxu": {"vlatch", "vmatmul", "vmatres", "vdwg"},
  "load": {"vector_load", "vector_load_slane_stride"},
  "store": {"vector_store", "vector_store_slane_stride", "vector_store_masked"},
}
MARKER = {"decode": "llo.vmatmul", "spline": "llo.vperm "}


def innermost_loop_with(text: str, marker: str) -> str:
  """The body of the innermost ``scf.for`` in an LLO module that contains ``marker``."""
  lines = text.splitlines()
  best = None
  for i, line in enumerate(lines):
    if "scf.for" not in line:
      continue
    indent = len(line) - len(line.lstrip())
    for j in range(i + 1, len(lines)):
      s = lines[j]
      if s.strip() == "}" and len(s) - len(s.lstrip()) == indent:
        break
    body = "\n".join(lines[i + 1 : j])
    if marker in body and "scf.for" not in body:
      best = body
  if best is None:
    raise ValueError(f"no innermost scf.for containing {marker!r} in the LLO module")
  return best


def count_units(body: str) -> dict[str, int]:
  """Vector ops of an LLO loop body by unit (see the module docstring)."""
  out = {"valu": 0, "permute": 0, "mxu": 0, "load": 0, "store": 0}
  # "%r = llo.vadd.f32 ...", "llo.vector_store ..." or the generic form "llo.vlatch"(...).
  for op in re.findall(r'(?:^|=)\s*"?llo\.(v\w+)', body, flags=re.M):
    if op in NOT_COUNTED:
      continue
    unit = next((u for u, ops in UNITS.items() if op in ops), "valu")
    out[unit] += 1
  return out


def _case(name: str):
  """(function, specs, kind, elements per loop iteration) of a case."""
  import functools

  import jax
  import jax.numpy as jnp

  sds = jax.ShapeDtypeStruct
  if name.startswith("decode"):
    from kernels_pallas.bitplane_matmul import blocks as bblocks
    from kernels_pallas.bitplane_matmul import ops as bops

    k = n = 1024
    xd = jnp.bfloat16 if name == "decode_bf16" else jnp.float32
    cfg = bblocks.pick_config("tpu", 1, k, n, 128, 2)
    op = functools.partial(
      bops.bitplane_matmul, impl="pallas", platform="tpu", precisions=(2, 3, 4)
    )
    specs = (
      sds((1, k), xd),
      sds((4, k // 32, n), jnp.uint32),
      sds((9, k // 128, n), jnp.float16),
      sds((3, k // 128, n), jnp.float16),
      sds((), jnp.int32),
    )
    return op, specs, "decode", cfg.bk * cfg.bn
  from kernels_pallas.spline_lookup import blocks as sblocks
  from kernels_pallas.spline_lookup import ops as sops
  from kernels_pallas.spline_lookup.grid import SigmaGrid

  g = int(name.rsplit("g", 1)[1])
  op = functools.partial(
    sops.spline_lookup,
    grid=SigmaGrid(g),
    impl="pallas",
    interpret=False,
    platform="tpu",
    block_sizes=sblocks.table_row("tpu", g, variant="gather").config,
  )
  specs = (sds((2048, 8, 2), jnp.float32), sds((8, g + 1, g + 1, 512), jnp.float32))
  return op, specs, "spline", 32 * 128  # one output tile: 32 rows x 128 samples, one pair


def measure(name: str, target: str = "v5e") -> dict:
  """Compiles case ``name`` for ``target`` with the LLO dump on and returns the counts.

  Must run before anything in this process loads libtpu (the dump flag is read at load).
  """
  if name not in CASES:
    raise ValueError(f"case must be one of {CASES}; got {name!r}")
  with tempfile.TemporaryDirectory() as dump:
    args = os.environ.get("LIBTPU_INIT_ARGS", "")
    os.environ["LIBTPU_INIT_ARGS"] = f"{args} --xla_mosaic_dump_to={dump}".strip()
    from benchmarks import _targets

    f, specs, kind, elements = _case(name)
    _targets.compile_for_tpu(f, specs, target)
    files = sorted(p for p in os.listdir(dump) if p.endswith("post-finalize-llo.txt"))
    if not files:
      raise RuntimeError(
        "libtpu wrote no LLO dump: was libtpu already loaded in this process before "
        "LIBTPU_INIT_ARGS was set?"
      )
    bodies = []
    for p in files:
      with open(os.path.join(dump, p)) as fh:
        text = fh.read()
      try:
        bodies.append(innermost_loop_with(text, MARKER[kind]))
      except ValueError:
        continue
  if len(bodies) != 1:
    raise RuntimeError(f"expected one kernel loop with {MARKER[kind]!r}, found {len(bodies)}")
  units = count_units(bodies[0])
  per = {u: round(c * 1024 / elements, 3) for u, c in units.items()}
  return dict(case=name, target=target, elements_per_iteration=elements, ops=units, per_element=per)


NAMES = ("case", "target", "json")


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
  flags.DEFINE_enum("case", "decode_bf16", CASES, "Kernel case to compile.", flag_values=fv)
  flags.DEFINE_enum("target", "v5e", ["v5e", "v6e"], "TPU generation.", flag_values=fv)
  flags.DEFINE_bool("json", False, "Print one JSON object instead of text.", flag_values=fv)


def main(argv, fv: flags.FlagValues = flags.FLAGS):
  _cli.no_arguments(argv)
  a = _cli.values(fv, NAMES)
  r = measure(a["case"], a["target"])
  if a["json"]:
    print(json.dumps(r))
    return
  unit = "weight-plane" if a["case"].startswith("decode") else "(sample, pair, output)"
  print(f"{r['case']} on {r['target']}: hot-loop vector ops {r['ops']}")
  print(f"per {unit}: " + ", ".join(f"{u} {v}" for u, v in r["per_element"].items()))


if __name__ == "__main__":
  define_flags()
  _cli.run(main)
