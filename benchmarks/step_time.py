r"""Benchmark: trainer step time with the data on the device vs a per-step host round trip.

Times ``core.trainer.train`` steps (after compile) of QAM on the point maze
(``experiments/configs/qam/pointmaze_qam.py``: 2 x 256 networks, K = 2, H = 5, N = 10, batch 128;
a smaller offline dataset) and lmKAN on the 32-D teacher (``experiments/configs/lmkan/teacher.py``:
32 -> 16 -> 16 -> 16 -> 1, batch 512) on two data paths:

  * device: the methods as they are (``Method.device_data`` / ``device_batch``): the dataset or
    sampler parameters live on the devices and the batch is drawn inside the jitted step;
  * host: the reference, the previous behaviour, measured in the same run: a subclass with no
    ``device_data`` whose ``get_batch(step)`` runs the same ``device_batch`` as its own jitted
    program, fetches it with ``jax.device_get`` (one host sync per step) and hands the host
    arrays back to the trainer, which ships them to the devices again.

Per run: ``--warmup`` steps (the first compiles), then ``--windows`` windows of ``--window`` steps;
the state is waited for at each window boundary only (the steps inside a window dispatch
asynchronously, as in a real run). Reported: the median over windows (of all ``--rounds`` runs
of that path, the paths alternating) of ms/step, the ratio host / device (> 1: the device path
is faster), and the largest absolute difference of the final parameters of the two paths (0 when
they train bitwise alike). Evaluation is skipped; logging and the one checkpoint come after the
last window.

Run from the repository root:
  python -m benchmarks.step_time
  python -m benchmarks.step_time --methods lmkan --window 50 --rounds 3
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

if __package__ in (None, ""):  # run as a file: make the repository root importable
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app, flags
import jax  # pylint: disable=g-import-not-at-top
import numpy as np

from experiments import _cli
from experiments.configs.lmkan import teacher
from experiments.configs.qam import pointmaze_qam
from iclr26_jax.core import sharding as shd
from iclr26_jax.core import trainer
from iclr26_jax.lmkan.method import LMKANMethod
from iclr26_jax.qam.method import QAMMethod

METHODS = ("qam", "lmkan")


def _config(name: str, steps: int, tiny: bool):
  """The benchmark config of ``name`` running ``steps`` trainer steps (no evaluation)."""
  run = (
    f"num_steps={steps},log_every={steps},checkpoint_every={steps},eval_every=0,progress_bar=False"
  )
  if name == "qam":
    size = "smoke,agent.flow_steps=2,agent.horizon=2," if tiny else "data.num_episodes=200,"
    return pointmaze_qam.get_config(size + run)
  size = "smoke,lmkan.hidden=(4,)," if tiny else "lmkan.test_size=256,"
  return teacher.get_config(size + run)


def _no_eval(cls):
  """``cls`` on the device path, without evaluation (not timed, and it would compile)."""

  class Device(cls):
    def evaluate(self, state):
      del state
      return {}

  Device.__name__ = f"{cls.__name__}Device"
  return Device


def host_reference(cls):
  """``cls`` on the host path: the previous behaviour (jitted sampler, ``device_get`` per step)."""

  class Host(_no_eval(cls)):
    _fetch = None

    def device_data(self):
      return None

    def get_batch(self, step):
      if self._fetch is None:
        data = jax.device_put(cls.device_data(self))
        sample = jax.jit(self.device_batch)
        self._fetch = lambda s: sample(data, np.int32(s))
      batch = jax.device_get(self._fetch(step))
      rows = shd.process_slice(int(self.config.batch_size))
      return jax.tree.map(lambda v: np.asarray(v)[rows], batch)

  Host.__name__ = f"{cls.__name__}Host"
  return Host


def _timed_run(method, config, warmup: int, window: int, windows: int):
  """Trains ``method`` once; returns (ms/step of each window, final params on the host)."""
  marks = []

  def hook(step, state):
    if step >= warmup and (step - warmup) % window == 0:
      jax.block_until_ready(state)
      marks.append(time.perf_counter())

  with tempfile.TemporaryDirectory() as workdir:
    result = trainer.train(method, config, workdir, hooks=(hook,))
    params = jax.device_get(result.state.params)
  assert len(marks) == windows + 1, (len(marks), windows)
  return [1e3 * (b - a) / window for a, b in zip(marks, marks[1:])], params


def _max_abs_diff(a, b) -> float:
  return max(
    float(np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64))))
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b))
  )


def bench(name: str, warmup: int, window: int, windows: int, rounds: int, tiny: bool) -> dict:
  """Times both paths of one method; prints its two rows and returns the medians."""
  cls = {"qam": QAMMethod, "lmkan": LMKANMethod}[name]
  config = _config(name, warmup + window * windows, tiny)
  paths = {"device": _no_eval(cls), "host": host_reference(cls)}
  times = {p: [] for p in paths}
  params = {}
  for _ in range(rounds):
    for path, kind in paths.items():
      t, params[path] = _timed_run(kind(config), config, warmup, window, windows)
      times[path] += t
  med = {p: statistics.median(t) for p, t in times.items()}
  diff = _max_abs_diff(params["device"], params["host"])
  print(
    f"\n{name}: batch {config.batch_size}, {len(times['device'])} windows of {window} steps "
    f"per path"
  )
  header = f"{'path':<8} {'ms/step':>9} {'min':>9} {'ratio':>7}"
  print(header)
  print("-" * len(header))
  for path in paths:
    print(f"{path:<8} {med[path]:>9.3f} {min(times[path]):>9.3f} {med[path] / med['device']:>7.2f}")
  print(f"final params max|device - host| = {diff:.3g}")
  return {"device_ms": med["device"], "host_ms": med["host"], "params_diff": diff}


NAMES = ("methods", "warmup", "window", "windows", "rounds", "tiny")


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
  """Defines this tool's flags in ``fv`` (called only when the file is the program)."""
  flags.DEFINE_list(
    "methods", list(METHODS), f"Comma-separated subset of {','.join(METHODS)}.", flag_values=fv
  )
  flags.DEFINE_integer(
    "warmup", 5, "Untimed steps (the first compiles).", lower_bound=1, flag_values=fv
  )
  flags.DEFINE_integer("window", 20, "Steps per timed window.", lower_bound=1, flag_values=fv)
  flags.DEFINE_integer("windows", 5, "Timed windows per run.", lower_bound=1, flag_values=fv)
  flags.DEFINE_integer(
    "rounds", 2, "Runs per path, alternating paths.", lower_bound=1, flag_values=fv
  )
  flags.DEFINE_boolean(
    "tiny",
    False,
    "Smoke sizes and fewer flow steps / layers (cheap compiles): for tests.",
    flag_values=fv,
  )


def main(argv, fv: flags.FlagValues = flags.FLAGS) -> dict:
  """Times every method of ``--methods``; returns ``{method: {device_ms, host_ms, params_diff}}``."""
  _cli.no_arguments(argv)
  a = _cli.values(fv, NAMES)
  methods = [m for m in a["methods"] if m]
  bad = sorted(set(methods) - set(METHODS))
  if bad or not methods:
    raise app.UsageError(f"--methods must name some of {METHODS}; got {a['methods']!r}")
  print(
    f"backend={jax.default_backend()} devices={jax.device_count()} "
    f"({jax.devices()[0].device_kind}) ratio = ms/step over the device path's, same run"
  )
  return {
    m: bench(m, a["warmup"], a["window"], a["windows"], a["rounds"], a["tiny"]) for m in methods
  }


if __name__ == "__main__":
  define_flags()
  _cli.run(main)
