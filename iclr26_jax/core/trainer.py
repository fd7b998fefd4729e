"""The training loop most methods use: ``train(method, config, workdir)`` and the ``Method``
protocol a method package implements.

``train`` locks the workdir, checks the config against the stored run, restores the newest
readable checkpoint (or initialises), then runs one jitted, donated ``update(state, batch) ->
(state, metrics)`` per step to ``config.num_steps``, logging, evaluating and checkpointing on the
config's schedule; a NaN/inf loss or gradient norm stops it with ``NonFiniteError``. All
randomness and the batch of step ``s`` are functions of ``s``, so a resumed run ends bitwise equal
to an uninterrupted one. Also: ``TrainResult``, ``make_step_fn``, ``make_device_step_fn``.

The loop step by step, determinism and the device-data path: docs/runs.md ("The training loop").
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import sys
from typing import Any, Callable, Mapping

from absl import logging
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from iclr26_jax.core import checkpoint as ckpt_lib
from iclr26_jax.core import config as config_lib
from iclr26_jax.core import interrupt
from iclr26_jax.core import metrics as metrics_lib
from iclr26_jax.core import preemption
from iclr26_jax.core import sharding as shd
from iclr26_jax.core import workdir as workdir_lib
from iclr26_jax.core.train_state import TrainState


class NonFiniteError(FloatingPointError):
  """A loss or gradient norm became NaN or infinite; the message names the step range."""


class Method:
  """What a method package gives the trainer. Subclass and implement ``init_state``, ``update``,
  ``evaluate`` and one data path: ``get_batch`` (host arrays, the default) or ``device_data`` +
  ``device_batch`` (data kept on the devices, the batch drawn inside the jitted step).

  Attributes:
    name: registry name.
    config: the locked run config.
  """

  name: str = "method"

  def __init__(self, config: ml_collections.ConfigDict):
    self.config = config

  def init_state(self, rng: jax.Array) -> TrainState:
    """A fresh ``TrainState`` from the root key ``rng`` (traced under ``jax.jit``)."""
    raise NotImplementedError

  def update(self, state: TrainState, batch: Any) -> tuple[TrainState, Mapping[str, jax.Array]]:
    """One pure training step; metrics are scalars with namespaced keys."""
    raise NotImplementedError

  def get_batch(self, step: int) -> Any:
    """This process's rows of the global batch of ``step`` (a pytree of host arrays).

    Must depend on ``step`` (and the config) alone; see ``shd.process_slice``. Not called when
    ``device_data`` returns a pytree.
    """
    raise NotImplementedError

  def device_data(self) -> Any | None:
    """Arrays to keep on the devices for the whole run, or ``None`` (default: the host path).

    Returns:
      a pytree of host arrays (numpy or ``jax.Array``; the same values on every process, e.g.
      a dataset or a sampler's fixed parameters) that ``device_batch`` draws batches from. The
      trainer replicates it over the mesh once (one copy per device) and passes it into the
      jitted step.
    """
    return None

  def device_batch(self, data: Any, step: jax.Array) -> Any:
    """The global batch of ``step``, traced inside the jitted step (used with ``device_data``).

    Args:
      data: the ``device_data()`` pytree as replicated ``jax.Array`` leaves (tracers here).
      step: int32 scalar (traced): the number of updates applied so far, i.e. the same index
        ``get_batch`` would receive for this update.
    Returns:
      a pytree of arrays ``(B, ...)`` with ``B = config.batch_size`` (all rows, not this
      process's): a function of ``data`` and ``step`` alone (fold the step into a fixed key), so
      a resumed run redraws the same batches. The trainer shards the rows over the ``data`` axis.
    """
    raise NotImplementedError

  def evaluate(self, state: TrainState) -> dict[str, float]:
    """Evaluation metrics (namespaced ``eval/...``); default none."""
    del state
    return {}


@dataclasses.dataclass
class TrainResult:
  state: TrainState
  metrics: dict[str, float]
  eval_metrics: dict[str, float]
  workdir: str
  resumed_from: int | None
  preempted: str | None = None  # "SIGTERM" / "SIGINT": stopped early with a checkpoint saved
  # Every logged record, ``{"step": s, **values}`` in step order: training and evaluation
  # metrics, including (on process 0, with the JSON-lines writer) those of the runs this one
  # resumed; the same rows as ``metrics.jsonl`` without its event lines.
  history: list[dict[str, Any]] = dataclasses.field(default_factory=list)


def _watched(key: str) -> bool:
  return "loss" in key or "grad_norm" in key


def make_step_fn(update: Callable, mesh=None) -> Callable:
  """Wraps ``update`` with the non-finite guard.

  Returns ``step(state, batch, first_bad) -> (state, metrics, first_bad)`` where
  ``first_bad`` (int32 scalar, -1 while all is well) records the first step whose watched
  metrics were not finite. With ``mesh``, ``update`` is traced inside ``shd.rows_mesh(mesh)``:
  the per-sample arrays it draws itself and marks with ``shd.shard_rows`` are split over the
  mesh's ``data`` axis (PDNS, DSB).
  """

  def step(state, batch, first_bad):
    step_index = state.step
    with shd.rows_mesh(mesh):
      new_state, metrics = update(state, batch)
    ok = jnp.array(True)
    for k, v in metrics.items():
      if _watched(k):
        ok = ok & jnp.all(jnp.isfinite(v))
    first_bad = jnp.where((first_bad < 0) & ~ok, step_index.astype(jnp.int32), first_bad)
    return new_state, metrics, first_bad

  return step


def make_device_step_fn(method: Method, mesh) -> Callable:
  """``make_step_fn`` for the device-data path: the batch is drawn inside the step.

  Returns ``step(state, data, first_bad) -> (state, metrics, first_bad)``: ``data`` is the
  replicated ``device_data()``; the batch is ``method.device_batch(data, state.step)`` with its
  rows sharded over the mesh's ``data`` axis.
  """
  inner = make_step_fn(method.update, mesh)

  def step(state, data, first_bad):
    batch = shd.constrain_batch(method.device_batch(data, state.step), mesh)
    return inner(state, batch, first_bad)

  return step


def _validate(config: ml_collections.ConfigDict) -> None:
  config_lib.require(
    config,
    "seed",
    "num_steps",
    "batch_size",
    "log_every",
    "eval_every",
    "checkpoint_every",
    "keep_checkpoints",
    "mesh",
    "param_sharding",
  )
  config_lib.check_run(config)  # sizes, counts and the learning rate, naming the key
  metrics_lib.writer_names(_writers(config))  # unknown names, missing tensorboardX


def _writers(config: ml_collections.ConfigDict) -> tuple[str, ...]:
  """``config.writers`` (configs built without ``trainer_defaults`` log JSON lines only)."""
  return tuple(config.get("writers", ("jsonl",)))


def train(
  method: Method,
  config: ml_collections.ConfigDict,
  workdir: str,
  *,
  hooks: tuple[Callable[[int, TrainState], None], ...] = (),
  allow_config_change: bool = False,
) -> TrainResult:
  """Trains ``method`` to ``config.num_steps`` in ``workdir``, resuming if possible.

  The workdir is locked for the run; a resume compares ``config`` with the stored
  ``config.json`` before anything is touched. A config change outside ``workdir.RUNTIME_KEYS``
  raises unless ``allow_config_change`` (then it is recorded in ``config_history.jsonl`` and as
  an ``event`` line in ``metrics.jsonl``); a change of the state tree always raises.

  Args:
    method: a ``Method`` instance.
    config: the locked run config (``config_lib.trainer_defaults()`` fields plus the method's).
    workdir: run directory: ``config.json``, ``metrics.jsonl``, ``checkpoints/``, ``run.lock``.
    hooks: called as ``hook(step, state)`` after each update on the host (tests use it to
      simulate a kill); keep them cheap.
    allow_config_change: continue a stored run with a (non-structurally) different config.
  Returns:
    ``TrainResult`` with the final state and the last logged and evaluation metrics.
  Raises:
    NonFiniteError: a watched metric became NaN/inf; the newest checkpoint is the last good one.
    WorkdirBusyError: another run holds the workdir (``core.workdir``).
    ConfigChangedError: the config differs from the stored run (naming the keys), or
      ``config.json`` is missing or unreadable in a workdir with checkpoints.
  """
  _validate(config)
  workdir = os.path.abspath(workdir)
  interrupt.set_phase("run", "starting the run")
  # A run that stops before its first update leaves the workdir as it found it (no directory
  # when there was none): nothing in it could be resumed from.
  before = set(os.listdir(workdir)) if os.path.isdir(workdir) else None
  updates: list[int] = []
  lock = None
  try:
    lock = _lock(workdir)
    return _train(
      method,
      config,
      workdir,
      (*hooks, lambda step, state: updates.append(step)),
      allow_config_change,
    )
  except BaseException as e:
    fresh = before is None or not (before - {".run.lock.guard"})
    if not updates and lock is not None and fresh:
      _undo_workdir(workdir, before, lock)
      lock = None
    oom = isinstance(e, jax.errors.JaxRuntimeError) and (
      "RESOURCE_EXHAUSTED" in str(e) or "out of memory" in str(e).lower()
    )
    if isinstance(e, MemoryError) and not isinstance(e, StepMemoryError) or oom:
      raise _memory_error(config, workdir, e, bool(updates), fresh) from e
    raise
  finally:
    if lock is not None:
      lock.release()


class StepMemoryError(MemoryError):
  """The batch or the training step does not fit in host or device memory."""


def _memory_error(
  config, workdir: str, error: BaseException, started: bool, fresh: bool
) -> StepMemoryError:
  first = str(error).strip().splitlines()[0][:300] if str(error).strip() else type(error).__name__
  if started:
    when = "training stopped; the checkpoints saved before are intact"
  elif fresh:
    when = "nothing was trained and no workdir was left behind"
  else:
    when = "nothing was trained; the workdir is as it was"
  return StepMemoryError(
    f"a training step does not fit in memory with batch_size={int(config.batch_size)} "
    f"({type(error).__name__}: {first}); {when}; lower batch_size (or the model size) and run "
    f"again with --workdir={workdir}"
  )


def _undo_workdir(workdir: str, before: set[str] | None, lock) -> None:
  """Removes what a run that never updated wrote in ``workdir`` (all of it when this run made
  the directory), then the lock."""
  lock.release()
  if before is None:
    shutil.rmtree(workdir, ignore_errors=True)
    return
  for name in set(os.listdir(workdir)) - before - {".run.lock.guard"}:
    path = os.path.join(workdir, name)
    if os.path.isdir(path):
      shutil.rmtree(path, ignore_errors=True)
    else:
      with contextlib.suppress(OSError):
        os.remove(path)


def _lock(workdir: str) -> workdir_lib.WorkdirLock | None:
  """Process 0 takes the workdir lock; with several processes all of them learn the outcome
  (so none waits in a collective for a process 0 that stopped)."""
  lock, error = None, None
  if jax.process_index() == 0:
    try:
      lock = workdir_lib.WorkdirLock(workdir).acquire()
    except workdir_lib.WorkdirBusyError as e:
      error = e
    if lock is not None and lock.stale_owner:
      print(
        f"note: took over the stale lock of a finished run (pid "
        f"{lock.stale_owner.get('pid')}) in {workdir}",
        file=sys.stderr,
        flush=True,
      )
  if jax.process_count() > 1:
    from jax.experimental import multihost_utils

    ok = int(multihost_utils.broadcast_one_to_all(np.int32(error is None)))
    if not ok and error is None:
      raise workdir_lib.WorkdirBusyError(f"process 0 could not lock workdir {workdir}")
  if error is not None:
    raise error
  return lock


def _check_identity(
  config, workdir: str, ckpt: ckpt_lib.Checkpointer, target, allow_config_change: bool
) -> dict:
  """Compares ``config`` with the run stored in ``workdir``; raises before anything changes.

  Returns:
    the config changes to record (empty when none, or when there is no checkpoint to resume).
  """
  steps = ckpt.steps()
  if not steps:
    return {}  # nothing to resume: a fresh run (lines of a run killed before its first save go)
  new = config_lib.to_dict(config)
  try:
    old = workdir_lib.load_config(workdir)
  except (OSError, ValueError) as e:  # truncated or damaged JSON, unreadable file
    raise workdir_lib.missing_config_error(workdir, steps, f"cannot be read ({e})") from e
  if old is None:
    if not allow_config_change:
      raise workdir_lib.missing_config_error(workdir, steps, "is missing")
    changes = {"config.json": (None, "missing: the run's identity was not checked")}
  else:
    changes = workdir_lib.config_changes(old, new)
  if int(config.num_steps) < steps[-1]:
    print(
      f"note: num_steps={int(config.num_steps)} is below the newest checkpoint (step "
      f"{steps[-1]}) in {ckpt.directory}: nothing is trained; the run ends at step {steps[-1]}",
      file=sys.stderr,
      flush=True,
    )
  want = ckpt_lib.structure(target)
  for s in reversed(steps):  # the newest checkpoint whose metadata can be read
    try:
      saved = ckpt.structure(s)
    except Exception:  # noqa: BLE001 — unreadable; restore will move it aside.
      continue
    diff = ckpt_lib.structure_diff(saved, want)
    if diff:
      raise workdir_lib.structural_error(workdir, changes, diff)
    break
  significant = {k: v for k, v in changes.items() if not workdir_lib.is_runtime_key(k)}
  if significant and not allow_config_change:
    raise workdir_lib.nonstructural_error(workdir, significant)
  return changes


def _train(
  method: Method, config: ml_collections.ConfigDict, workdir: str, hooks, allow_config_change: bool
) -> TrainResult:
  run = _Run(method, config, workdir, hooks, allow_config_change)
  try:
    return run.execute()
  finally:
    run.close()


class _Run:
  """One ``train`` call in a locked workdir, from what the workdir holds to its ``TrainResult``.

  ``start`` checks the run's identity, restores (or initialises) the state and records accepted
  config changes; ``loop`` runs the updates with their logging, evaluation, checkpoints,
  non-finite checks and preemption; ``result`` finishes. ``close`` closes the checkpointer and
  the metric writer whatever happened.
  """

  def __init__(self, method: Method, config, workdir: str, hooks, allow_config_change: bool):
    self.method, self.config, self.workdir = method, config, workdir
    self.hooks, self.allow_config_change = hooks, allow_config_change
    self.primary = jax.process_index() == 0
    self.mesh = shd.make_mesh(dict(config.mesh))
    self.rng = jax.random.PRNGKey(int(config.seed))
    self.abstract = jax.eval_shape(method.init_state, self.rng)
    self.state_sh = shd.state_shardings(self.abstract, self.mesh, config.param_sharding)
    self.target = ckpt_lib.abstract_like(self.abstract.arrays(), self.state_sh.arrays())
    self.ckpt = ckpt_lib.Checkpointer(
      os.path.join(workdir, "checkpoints"), keep=int(config.keep_checkpoints)
    )
    # A save abandoned by a second Ctrl-C or a kill leaves Orbax's temporary folder; this run
    # holds the workdir's lock, so no other writer owns it.
    for path in self.ckpt.remove_temporary():
      self._say(f"removed {path} (an unfinished save of an earlier run)")
    # Touches no file until its first write or truncate_after; closed on success and on errors.
    self.writer = metrics_lib.MetricWriter(workdir, writers=_writers(config))
    self.num_steps = int(config.num_steps)
    self.resumed_from: int | None = None
    self.restored_verified = False
    self.saved_since_restore = False
    self.start_step = 0  # the step the loop started from (set by ``loop``)
    self.last_checked = 0
    self.first_bad = None  # int32 scalar on the devices: the first bad update, -1 while none

  def _say(self, line: str) -> None:
    if self.primary:
      print(line, file=sys.stderr, flush=True)

  def close(self) -> None:
    try:
      # After a second Ctrl-C the save under way may end without replacing the KeyboardInterrupt
      # by its outcome; the caller reports what is on disk.
      self.ckpt.close(settle=isinstance(sys.exc_info()[1], KeyboardInterrupt))
    finally:
      self.writer.close()

  def execute(self) -> TrainResult:
    state = self.start()
    state, step, preempted, last_metrics, eval_metrics = self.loop(state)
    return self.result(state, step, preempted, last_metrics, eval_metrics)

  # -- start: identity, restore, config changes ----------------------------------------------

  def start(self):
    """The state to continue from: restored from the newest readable checkpoint, or new."""
    ckpt, writer, workdir = self.ckpt, self.writer, self.workdir
    changes = _check_identity(self.config, workdir, ckpt, self.target, self.allow_config_change)
    had = len(ckpt.steps())
    restored = ckpt.restore(self.target)
    if self.primary:
      config_lib.dump(self.config, workdir)
    if restored is None:
      state = jax.jit(self.method.init_state, out_shardings=self.state_sh)(self.rng)
      writer.truncate_after(0)  # lines of a run killed before its first checkpoint
      if had:
        self._say(
          f"WARNING: none of the {had} checkpoint(s) in {ckpt.directory} could be read "
          "(moved to corrupt/); starting fresh from step 0"
        )
      logging.info("initialised a new run in %s", workdir)
    else:
      self.resumed_from, tree = restored
      state = self.abstract.with_arrays(tree)
      writer.truncate_after(self.resumed_from)
      self._say(f"resumed from checkpoint step {self.resumed_from} in {workdir}")
    self.restored_verified = (
      self.resumed_from is not None and ckpt.stored_digest(self.resumed_from) is not None
    )
    if changes and self.primary:
      # Every accepted change goes to the history; the metrics log gets an event line only for
      # changes to the run itself (not for the display or device-topology keys).
      at = self.resumed_from or 0
      workdir_lib.record_change(workdir, at, changes)
      significant = {k: v for k, v in changes.items() if not workdir_lib.is_runtime_key(k)}
      if significant:
        writer.event(at, "config_change", changes={k: [o, n] for k, (o, n) in significant.items()})
        self._say(
          f"config changed at step {at} (recorded in {workdir_lib.HISTORY_NAME}): "
          f"{workdir_lib.format_changes(significant)}"
        )
    return state

  # -- the loop --------------------------------------------------------------------------------

  def check_finite(self, step: int) -> None:
    """Raises ``NonFiniteError`` when an update up to ``step`` was not finite, naming it and the
    last good checkpoint."""
    bad = int(jax.device_get(self.first_bad))
    if bad >= 0:
      ckpt, resumed_from = self.ckpt, self.resumed_from
      ckpt.wait()
      good = ckpt.latest_step()
      where = (
        f"last good checkpoint: step {good} in {ckpt.directory}"
        if good is not None
        else "no checkpoint was written yet"
      )
      after = ""
      if resumed_from is not None and not self.saved_since_restore:
        after = (
          f"; this run resumed from checkpoint step {resumed_from} and has saved nothing since: "
          "if that checkpoint is damaged, inspect it with `python -m experiments.ckpt "
          f"{self.workdir}` (its arrays passed their digest check on restore, so the cause is "
          "more likely the training itself)"
          if self.restored_verified
          else f"; this run resumed from checkpoint step {resumed_from} (written without a "
          f"digest, so it was not verified): inspect it with `python -m experiments.ckpt "
          f"{self.workdir}`"
        )
      raise NonFiniteError(
        f"non-finite loss or gradient norm at step {bad + 1} (first bad update among steps "
        f"{self.last_checked + 1}..{step}); training stopped; {where}{after}"
      )
    self.last_checked = step

  def save(self, step: int, state) -> None:
    self.check_finite(step)
    self.ckpt.save(step, state.arrays())
    self.saved_since_restore = True

  def loop(self, state):
    """Runs the updates from the state's step to ``num_steps``; returns ``(state, last step,
    preempted signal or None, last logged metrics, last evaluation metrics)``."""
    method, config, mesh, ckpt, writer = self.method, self.config, self.mesh, self.ckpt, self.writer
    state_sh, num_steps = self.state_sh, self.num_steps
    rep = shd.replicated(mesh)
    self.first_bad = jax.device_put(jnp.array(-1, jnp.int32), rep)
    start = self.start_step = int(jax.device_get(state.step))
    self.last_checked = start

    def jit_step(fn, arg):  # the state donated; the second argument keeps ``arg``'s shardings
      in_sh = (state_sh, jax.tree.map(lambda x: x.sharding, arg), rep)
      return jax.jit(
        fn, in_shardings=in_sh, out_shardings=(state_sh, rep, rep), donate_argnums=(0,)
      )

    step_fn = None
    data = method.device_data() if start < num_steps else None
    if data is not None:  # device path: the data goes to the devices once, here
      data = shd.replicate(data, mesh)
      step_fn = jit_step(make_device_step_fn(method, mesh), data)
    bar = None
    # The bar starts after the first update returns, so its rate and ETA leave out compile time;
    # until then a line says the step is compiling.
    want_bar = bool(self.primary and config.progress_bar and start < num_steps)
    progress = metrics_lib.Progress(num_steps, start, method.name) if want_bar else None
    last_metrics: dict[str, float] = {}
    eval_metrics: dict[str, float] = {}
    # Several XLA:CPU devices: waiting for each step bounds the queue of dispatched steps, which
    # can otherwise starve the collectives' rendezvous until it aborts; accelerators keep async.
    sync_each_step = mesh.devices.size > 1 and all(d.platform == "cpu" for d in mesh.devices.flat)

    preempted = None
    step = start
    stop = preemption.StopRequest()
    interrupt.check()  # a signal a library swallowed while the run started
    try:
      stop.__enter__()
      for step in range(start + 1, num_steps + 1):
        ckpt.poll()  # a background save that has failed stops the run before the next update
        if data is not None:
          state, metrics, self.first_bad = step_fn(state, data, self.first_bad)
        else:
          batch = shd.global_batch(method.get_batch(step - 1), mesh)
          if step_fn is None:
            step_fn = jit_step(make_step_fn(method.update, mesh), batch)
          state, metrics, self.first_bad = step_fn(state, batch, self.first_bad)
        if sync_each_step:
          self.first_bad.block_until_ready()
        for hook in self.hooks:
          hook(step, state)
        if bar is not None:
          bar.update(step)
        elif progress is not None:
          bar = progress
          bar.start(step)
          writer.bar = bar
        is_last = step == num_steps
        if step % int(config.log_every) == 0 or is_last:
          last_metrics = writer.write(step, metrics)
          self.check_finite(step)
        if (config.eval_every and step % int(config.eval_every) == 0) or is_last:
          self.check_finite(step)
          with (
            bar.phase(f"evaluating at step {step}") if bar is not None else contextlib.nullcontext()
          ):
            eval_metrics = dict(method.evaluate(state))
          if eval_metrics:
            writer.write(step, eval_metrics)
          writer.flush()
        if step % int(config.checkpoint_every) == 0 or is_last:
          self.save(step, state)
        # Every process asks at every step (the multi-process sync protocol needs it).
        if stop.should_stop(step) and not is_last:
          if step % int(config.checkpoint_every) != 0:
            self.save(step, state)
          ckpt.wait()
          preempted = stop.signal_name
          break
    finally:
      interrupt.set_phase("finish")  # from here a signal is recorded: the last save completes
      stop.__exit__()
      if bar is not None:
        bar.close()
      writer.bar = None
      if not isinstance(sys.exc_info()[1], KeyboardInterrupt):
        ckpt.wait()
      # else (a second Ctrl-C): ``close`` lets the save under way end without replacing the
      # KeyboardInterrupt by its outcome.
    return state, step, preempted, last_metrics, eval_metrics

  # -- the result ------------------------------------------------------------------------------

  def result(self, state, step, preempted, last_metrics, eval_metrics) -> TrainResult:
    if preempted is not None:
      self.writer.event(step, "preempted", signal=preempted)
      self.writer.flush()
      self._say(
        f"{preempted} received: stopped at step {step} of {self.num_steps} with checkpoint step "
        f"{step} saved in {self.ckpt.directory}; run the same command to resume"
      )
      eval_metrics = {}
    else:
      if self.start_step >= self.num_steps and not eval_metrics:
        eval_metrics = dict(self.method.evaluate(state))
    return TrainResult(
      state=state,
      metrics=last_metrics,
      eval_metrics=eval_metrics,
      workdir=self.workdir,
      resumed_from=self.resumed_from,
      preempted=preempted,
      history=self.writer.history,
    )
