"""Inspect a run's checkpoints: steps, digests, leaf shapes, and differences between two runs.

  python -m experiments.ckpt WORKDIR [--step=N] [--compare=OTHER_WORKDIR] [--leaves]

For each checkpoint in ``WORKDIR/checkpoints`` (or the one ``--step`` names) it prints the step,
the number of leaves and bytes, and whether the arrays as read now match the digests written at
save time (``ok``, ``DAMAGED: <leaves>``, ``unreadable: <error>``, or ``no digest`` for a
checkpoint of a directory that never wrote digests; see ``iclr26_jax.core.checkpoint``). In a
directory that writes digests, a step whose digests cannot be read is ``DAMAGED``. ``--leaves``
lists every leaf's path, shape and dtype. ``--compare`` reads the same step (default: the newest
step both hold) of another workdir and prints, per leaf, the largest absolute difference
(``bitwise equal`` when all are zero) — how a resumed run is checked against an uninterrupted one.

Nothing is written or moved. Checkpoints are read onto the first local device, whatever mesh
wrote them. Exit status: 0 when every inspected checkpoint verifies, 1 when one is damaged or
unreadable (or the compared runs differ), 2 for a bad argument.
"""

from __future__ import annotations

import os
import sys

from absl import app, flags, logging

from experiments import _cli

NAMES = ("step", "compare", "leaves")


def define_flags(fv: flags.FlagValues) -> None:
  flags.DEFINE_integer(
    "step", None, "Inspect this step only (default: every step).", flag_values=fv
  )
  flags.DEFINE_string(
    "compare",
    None,
    "Another workdir: per-leaf max |a - b| at --step (default: the newest step both hold).",
    flag_values=fv,
  )
  flags.DEFINE_bool("leaves", False, "List every leaf's path, shape and dtype.", flag_values=fv)


def _checkpoint_dir(workdir: str) -> str:
  path = os.path.join(os.path.abspath(workdir), "checkpoints")
  if not os.path.isdir(path):
    raise app.UsageError(f"{path} does not exist (is {workdir} a run's workdir?)")
  return path


def read(directory: str, step: int):
  """``(tree of numpy arrays, verdict, digest)`` of ``step`` in a checkpoint directory, read onto
  the first local device: ``verdict`` is None when the arrays match their stored digests,
  ``"unverified"`` in a directory that never wrote digests, else why the step is damaged (see
  ``Checkpointer.check_digest``); ``digest`` is the ``tree_digest`` of what was read. Raises
  what Orbax raises for unreadable files."""
  import jax
  import numpy as np
  import orbax.checkpoint as ocp

  from iclr26_jax.core import checkpoint as ckpt_lib

  ck = ckpt_lib.Checkpointer(directory, async_save=False)
  try:
    with ckpt_lib._tolerant_event_loops():
      meta = ck._mgr.item_metadata(int(step))
    dev = jax.sharding.make_single_device_sharding(jax.local_devices()[0])
    target = jax.tree.map(
      lambda m: jax.ShapeDtypeStruct(tuple(m.shape), m.dtype, sharding=dev), meta
    )
    with ckpt_lib._tolerant_event_loops():
      tree = ck._mgr.restore(int(step), args=ocp.args.StandardRestore(target))
    digest = ckpt_lib.tree_digest(tree)
    stored = ck.check_digest(step, digest)
  finally:
    ck._mgr.close()

  def to_numpy(x):
    if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
      x = jax.random.key_data(x)
    return np.asarray(x)

  return jax.tree.map(to_numpy, tree), stored, digest


def verdict(why: str | None) -> str:
  """``ok``, ``no digest (...)`` or ``DAMAGED: <why>`` from ``read``'s verdict."""
  if why is None:
    return "ok"
  if why == "unverified":
    return "no digest (written before digests; not verifiable)"
  return f"DAMAGED: {why}"


def inspect(workdir: str, step: int | None = None, leaves: bool = False) -> tuple[list[str], bool]:
  """Report lines for ``workdir``'s checkpoints and whether all verified."""
  import numpy as np

  from iclr26_jax.core import checkpoint as ckpt_lib

  directory = _checkpoint_dir(workdir)
  ck = ckpt_lib.Checkpointer(directory, async_save=False)
  steps = ck.steps()
  ck._mgr.close()
  if step is not None and step not in steps:
    raise app.UsageError(f"no checkpoint step {step} in {directory}; it has steps {steps}")
  lines = [f"{directory}: steps {steps}"]
  if os.path.isdir(os.path.join(directory, "corrupt")):
    lines.append(f"  corrupt/: {sorted(os.listdir(os.path.join(directory, 'corrupt')))}")
  good = True
  for s in [step] if step is not None else steps:
    try:
      tree, stored, digest = read(directory, s)
    except Exception as e:  # noqa: BLE001 — report it and go on to the next step
      first = str(e).splitlines()[0][:200] if str(e) else ""
      lines.append(f"  step {s}: unreadable: {type(e).__name__}: {first}")
      good = False
      continue
    flat = ckpt_lib.structure(tree)
    nbytes = sum(int(np.asarray(x).nbytes) for x in _leaves(tree))
    v = verdict(stored)
    good = good and not v.startswith("DAMAGED")
    lines.append(f"  step {s}: {len(flat)} leaves, {_size(nbytes)}, digest {v}")
    if leaves:
      for path, (shape, dtype) in flat.items():
        lines.append(f"    {path}: {dtype}{list(shape)} digest {digest[path]}")
  return lines, good


def _size(n: int) -> str:
  for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
    if n >= scale:
      return f"{n / scale:.1f} {unit}"
  return f"{n} B"


def _leaves(tree):
  import jax

  return jax.tree.leaves(tree)


def compare(workdir: str, other: str, step: int | None = None) -> tuple[list[str], bool]:
  """Per-leaf max |a - b| between the same step of two workdirs; whether all are equal."""
  import jax
  import numpy as np

  from iclr26_jax.core import checkpoint as ckpt_lib

  dirs = [_checkpoint_dir(w) for w in (workdir, other)]
  all_steps = []
  for d in dirs:
    ck = ckpt_lib.Checkpointer(d, async_save=False)
    all_steps.append(set(ck.steps()))
    ck._mgr.close()
  common = sorted(all_steps[0] & all_steps[1])
  if step is None:
    if not common:
      raise app.UsageError(f"{dirs[0]} and {dirs[1]} hold no common step")
    step = common[-1]
  elif step not in common:
    raise app.UsageError(f"step {step} is not in both {dirs[0]} and {dirs[1]}")
  a, _, _ = read(dirs[0], step)
  b, _, _ = read(dirs[1], step)
  sa, sb = ckpt_lib.structure(a), ckpt_lib.structure(b)
  if sa != sb:
    return [f"step {step}: different trees: {'; '.join(ckpt_lib.structure_diff(sa, sb))}"], False
  pa = {ckpt_lib._path_str(p): x for p, x in jax.tree_util.tree_leaves_with_path(a)}
  pb = {ckpt_lib._path_str(p): x for p, x in jax.tree_util.tree_leaves_with_path(b)}
  lines, equal = [f"step {step}: {workdir} vs {other}"], True
  for k in sorted(pa):
    x, y = pa[k], pb[k]
    same = x.tobytes() == y.tobytes()
    equal = equal and same
    if np.issubdtype(x.dtype, np.number) or x.dtype == np.bool_:
      diff = float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))) if x.size else 0.0
    else:
      diff = float("nan")
    lines.append(f"  {k}: max |a - b| = {diff:.6g}{'' if same else ' (bits differ)'}")
  lines.append("bitwise equal" if equal else "NOT bitwise equal")
  return lines, equal


def main(argv, fv: flags.FlagValues = flags.FLAGS) -> int:
  if len(argv) != 2:
    raise app.UsageError("give one WORKDIR: python -m experiments.ckpt WORKDIR [--compare=OTHER]")
  a = _cli.values(fv, NAMES)
  if not fv["verbosity"].present:
    logging.set_verbosity(logging.WARNING)  # Orbax logs every read at INFO
  lines, ok = inspect(argv[1], a["step"], a["leaves"])
  if a["compare"]:
    more, equal = compare(argv[1], a["compare"], a["step"])
    lines += more
    ok = ok and equal
  print("\n".join(lines))
  return 0 if ok else 1


if __name__ == "__main__":
  define_flags(flags.FLAGS)

  def _main(argv):
    sys.exit(main(argv))

  _cli.run(_main)
