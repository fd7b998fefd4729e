"""Train one experiment: ``python -m experiments.main --config=FILE.py[:ARG] --workdir=DIR``.

ARG grammar (the text after the colon): comma-separated items, each either
  a variant word     (e.g. ``smoke``: what it means is up to the config file), or
  ``key=value``      (a field override; dotted keys reach nested fields, the value is parsed
                      to the type of the default: ``seed=3``, ``optim.learning_rate=0.01``,
                      ``toy.hidden=(32,32)``, ``progress_bar=false``).
  Example: ``--config=experiments/configs/toy/regression.py:smoke,mlp,seed=3``.
  Overrides may also be given as ``--config.key=value`` flags. Unknown variants, unknown keys and
  values of the wrong type stop the run before any compute, naming the key.
  ``--config=FILE.py --show_variants`` lists the file's variants and every field with its value.

The workdir belongs to one run: run the same command again to resume (bitwise equal to an
uninterrupted run). A second run on a busy workdir stops at once; a resume with a different
config stops before touching anything unless ``--allow_config_change`` is given (changes that
alter the state's structure always stop). On a TPU pod or multi-host GPU job run it on every
host with ``--multihost`` (or ICLR26_MULTIHOST=1). Dispatches on ``config.method`` through
``experiments.registry``.
"""

import errno
import os
import sys

from iclr26_jax.core import interrupt

if __name__ == "__main__" and not (
  "--multihost" in sys.argv or os.environ.get("ICLR26_MULTIHOST", "") not in ("", "0")
):
  # From here on a Ctrl-C or SIGTERM is one line and a prompt stop, at any moment (imports,
  # JAX start-up, restore, compile, data load, the final save): see core.interrupt. Several
  # processes leave SIGTERM to JAX's preemption sync manager.
  interrupt.install()

import importlib.util  # noqa: E402

from absl import app, flags, logging  # noqa: E402
from ml_collections import config_flags  # noqa: E402

from experiments import _cli, curves  # noqa: E402

from iclr26_jax.core import config as config_lib  # noqa: E402
from iclr26_jax.core import distributed  # noqa: E402

_CONFIG = config_flags.DEFINE_config_file(
  "config",
  None,
  "Experiment config file, optionally with ':ARG' where ARG is "
  "'variant,...,key=value,...' (e.g. ':smoke,seed=3'); see the grammar above and "
  "--show_variants.",
  lock_config=True,
)
_WORKDIR = flags.DEFINE_string(
  "workdir", None, "Run directory (checkpoints, metrics, config); required unless --show_variants."
)
_MULTIHOST = flags.DEFINE_bool(
  "multihost", False, "Call jax.distributed.initialize() before touching devices."
)
_ALLOW_CHANGE = flags.DEFINE_bool(
  "allow_config_change",
  False,
  "Resume a run whose stored config.json differs from this "
  "config (not in the state's structure); the change is recorded in config_history.jsonl "
  "and metrics.jsonl.",
)
_SHOW_VARIANTS = flags.DEFINE_bool(
  "show_variants",
  False,
  "Print the config file's variants and fields (with ARG applied) and exit; runs nothing.",
)
flags.mark_flags_as_required(["config"])


def _config_error_message(e: BaseException) -> str:
  """The innermost ``ConfigError`` message in ``e``'s chain, else ``e``'s last line."""
  found, x, seen, key_error = None, e, set(), isinstance(e, KeyError)
  while x is not None and id(x) not in seen:
    seen.add(id(x))
    if isinstance(x, config_lib.ConfigError) and not str(x).startswith("Error whilst"):
      found = str(x)
    key_error = key_error or isinstance(x, KeyError)
    x = x.__cause__ or x.__context__
  if found is not None:
    return found
  text = str(e).replace("\\n", "\n")
  if "Traceback" in text:  # keep the exception's own line, not the traceback ml_collections adds
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[-1].strip()
  text = " ".join(text.split())
  for _ in range(2):  # absl and KeyError each add a layer of quotes
    if len(text) > 1 and text[0] == text[-1] and text[0] in "\"'":
      text = text[1:-1].replace("\\'", "'")
  if key_error:
    return f"unknown config key: {text}"
  return text or type(e).__name__


def _syntax_error(e: BaseException) -> SyntaxError | None:
  """The ``SyntaxError`` in ``e``'s chain (a config file that does not parse), if any."""
  seen = set()
  while e is not None and id(e) not in seen:
    seen.add(id(e))
    if isinstance(e, SyntaxError):
      return e
    e = e.__cause__ or e.__context__
  return None


def _unknown_override(message: str, argv) -> str:
  """``unknown config key: LEAF`` (what absl reports for ``--config.a.b.LEAF=``) with the full
  dotted key of the flag that named it, e.g. ``unknown config key 'toy.nosuch'``."""
  prefix = "unknown config key: "
  if not message.startswith(prefix):
    return message
  leaf = message[len(prefix) :].strip()
  keys = [a[len("--config.") :].partition("=")[0] for a in argv[1:] if a.startswith("--config.")]
  hits = [k for k in keys if k == leaf or k.endswith("." + leaf) or ("." + leaf + ".") in k]
  if len(hits) != 1:
    return message
  parent = hits[0].rpartition("." + leaf)[0]
  where = f" ('{leaf}' is not a field of {parent})" if parent else ""
  return f"unknown config key '{hits[0]}'{where}"


def _config_spec() -> tuple[str, str | None]:
  """``--config=FILE.py:ARG`` as ``(FILE.py, ARG or None)`` (split at the first colon, as
  ml_collections does)."""
  spec = config_flags.get_config_filename(flags.FLAGS["config"])
  path, _, arg = spec.partition(":")
  return path, (arg if _ else None)


def parse_flags(argv):
  """absl parsing, with config mistakes (bad key, value, variant, missing file) reported as
  one line."""
  for arg in argv[1:]:  # --config.OLD.KEY=... of a renamed key: name the new one
    if arg.startswith("--config."):
      moved = config_lib.renamed_key_error(arg[len("--config.") :].partition("=")[0])
      if moved is not None:
        print(f"config error: {moved}\n(see --help)", file=sys.stderr)
        sys.exit(2)
  try:
    rest = flags.FLAGS(argv)
  except SyntaxError as e:  # the config file does not parse: its file and line, one line
    print(f"config error: {_syntax_message(e)}", file=sys.stderr)
    sys.exit(2)
  except (flags.Error, AttributeError, KeyError, TypeError, ValueError) as e:
    syntax = _syntax_error(e)
    if syntax is not None:
      print(f"config error: {_syntax_message(syntax)}", file=sys.stderr)
      sys.exit(2)
    message = _unknown_override(_config_error_message(e), argv)
    print(f"config error: {message}\n(see --help)", file=sys.stderr)
    sys.exit(2)
  path, _ = _config_spec()
  if not os.path.isfile(path):
    print(f"config error: config file {path!r} not found", file=sys.stderr)
    sys.exit(2)
  try:
    _CONFIG.value  # noqa: B018 (a file that failed to load raises only when read)
  except SyntaxError as e:
    print(f"config error: {_syntax_message(e)}", file=sys.stderr)
    sys.exit(2)
  except (IOError, ImportError) as e:
    print(f"config error: cannot load {path!r}: {_config_error_message(e)}", file=sys.stderr)
    sys.exit(2)
  return rest


def _syntax_message(e: SyntaxError) -> str:
  """``FILE:LINE: invalid syntax`` for a config file that does not parse."""
  return f"cannot load config file {e.filename}:{e.lineno}: {e.msg}"


def _workdir_problem(workdir: str) -> str | None:
  """Why ``workdir`` cannot hold a run (not a directory, not writable), or None. Checks without
  creating anything: the workdir if it exists, else its nearest existing parent."""
  path = os.path.abspath(workdir)
  if os.path.exists(path) and not os.path.isdir(path):
    return f"workdir {workdir!r} exists and is not a directory"
  probe = path
  while not os.path.exists(probe):
    probe = os.path.dirname(probe)
  if not os.path.isdir(probe):
    return f"workdir {workdir!r} cannot be created: {probe!r} is not a directory"
  if not os.access(probe, os.W_OK | os.X_OK):
    what = "is not writable" if probe == path else f"cannot be created: {probe!r} is not writable"
    return f"workdir {workdir!r} {what}"
  return None


def describe_config(path: str, arg: str | None) -> str:
  """The variants a config file knows and its fields (dotted ``key = value``) for ``arg``."""
  spec = importlib.util.spec_from_file_location("config_under_inspection", path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  with config_lib.recording_variants() as known:
    cfg = module.get_config(arg) if arg is not None else module.get_config()
  fields = config_lib.flat_fields(cfg)
  lines = [
    f"config {path}" + (f":{arg}" if arg else ""),
    "variants: " + (", ".join(sorted(known)) if known else "(none)"),
    f"fields ({len(fields)}; override with :key=value or --config.key=value):",
  ]
  width = max((len(k) for k in fields), default=0)
  lines += [f"  {k.ljust(width)} = {v!r}" for k, v in fields.items()]
  return "\n".join(lines)


def summary(metrics: dict, limit: int = 6) -> str:
  """A compact ``key value`` summary: losses first, then the rest, at most ``limit`` entries."""
  keys = sorted(metrics, key=lambda k: ("loss" not in k, k))
  parts = [
    f"{k} {metrics[k]:.4g}" if isinstance(metrics[k], float) else f"{k} {metrics[k]}"
    for k in keys[:limit]
  ]
  if len(keys) > limit:
    parts.append(f"+{len(keys) - limit} more")
  return ", ".join(parts)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  if _SHOW_VARIANTS.value:
    print(describe_config(*_config_spec()))
    return
  if not _WORKDIR.value:
    raise app.UsageError("--workdir is required (a directory for this run)")
  if not flags.FLAGS["verbosity"].present:
    logging.set_verbosity(logging.WARNING)  # Orbax is chatty at INFO; -v 0 brings it back
  distributed.maybe_initialize(_MULTIHOST.value)
  import jax

  from experiments import registry  # after distributed init: nothing touches devices first
  from iclr26_jax.core import checkpoint as ckpt_lib
  from iclr26_jax.core import datacheck, trainer
  from iclr26_jax.core import workdir as workdir_lib

  config = _CONFIG.value
  # First every range check of the run and its method, then the workdir, before anything is
  # built or written (a bad value is one line naming its dotted key, exit status 2).
  try:
    registry.validate(config)
  except (config_lib.ConfigError, ValueError) as e:
    print(f"config error: {_config_error_message(e)}", file=sys.stderr)
    sys.exit(2)
  problem = _workdir_problem(_WORKDIR.value)
  if problem is not None:
    print(f"error: {problem}", file=sys.stderr)
    sys.exit(2)
  try:
    method = registry.get_method(config.method)(config)
  except config_lib.ConfigError as e:
    print(f"config error: {_config_error_message(e)}", file=sys.stderr)
    sys.exit(2)
  except (datacheck.DataError, FileNotFoundError) as e:  # the method's data, read at construction
    print(f"error: {e}", file=sys.stderr)
    sys.exit(1)
  try:
    try:
      result = trainer.train(
        method, config, _WORKDIR.value, allow_config_change=_ALLOW_CHANGE.value
      )
    except jax.errors.JaxRuntimeError:
      distributed.await_peer_verdict()  # a dead peer: its one line and exit status 1
      raise
  except (
    workdir_lib.WorkdirBusyError,
    workdir_lib.ConfigChangedError,
    config_lib.ConfigError,
    ckpt_lib.CheckpointSaveError,
    ckpt_lib.CheckpointCorruptError,
    ckpt_lib.CheckpointMismatchError,
    trainer.NonFiniteError,
    trainer.StepMemoryError,
    datacheck.DataError,
    FileNotFoundError,
  ) as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(1)
  except OSError as e:  # a full disk or file system outside the cases above (config.json, ...)
    if e.errno not in _DISK_ERRNOS:
      raise
    print(f"error: {_disk_message(e, _WORKDIR.value)}", file=sys.stderr)
    sys.exit(1)
  except KeyboardInterrupt:
    # A second Ctrl-C: out at once (the first asked for a save at the next step boundary), without
    # waiting for a save under way; say what is on disk now. The next run removes the temporary
    # folder of a save that did not finish.
    on_disk = ckpt_lib.step_folders(os.path.join(_WORKDIR.value, "checkpoints"))
    kept = f"checkpoints on disk: steps {on_disk}" if on_disk else "no checkpoint on disk"
    print(
      f"second SIGINT: stopped at once (a save under way is abandoned); {kept}; run the same "
      "command to resume",
      file=sys.stderr,
      flush=True,
    )
    sys.stdout.flush()
    os._exit(130)
  except interrupt.Interrupted as e:
    where = f" while {e.phase}" if e.phase else ""
    print(
      f"{e.signal_name} received{where}, before training started: stopped; nothing saved "
      f"before was changed and the workdir is not locked; run the same command to resume",
      file=sys.stderr,
      flush=True,
    )
    # As a preemption in the loop: exit status 0. The trainer's cleanup has run (lock released,
    # files closed); skip the interpreter's teardown, which can crash in a JAX or Orbax thread
    # stopped mid-way (seen as a segmentation fault after a SIGTERM during the restore).
    sys.stdout.flush()
    os._exit(0)
  if result.preempted:
    return  # the trainer said where it stopped and how to resume; exit status 0
  if distributed.is_primary():
    parts = [f"done: step {int(result.state.step)} in {result.workdir}"]
    if result.metrics:
      parts.append(summary(result.metrics))
    if result.eval_metrics:
      parts.append(summary(result.eval_metrics))
    print(" | ".join(parts) + " (all values in metrics.jsonl)", file=sys.stderr)
    if result.resumed_from != int(result.state.step):  # this command trained: draw its curves
      curves.write_run_curves(result.workdir)  # <workdir>/curves.png; a failure only warns
    if interrupt.received():
      print(
        f"({interrupt.received()} received after training finished: ignored, the run is complete)",
        file=sys.stderr,
      )


_DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EACCES}


def _disk_message(e: OSError, workdir: str) -> str:
  """One line for a write that failed: the file, the cause and what to do."""
  if isinstance(e, (workdir_errors())) and e.strerror:
    return str(e.strerror)
  where = f" ({e.filename})" if e.filename else ""
  return (
    f"cannot write in {workdir}{where}: {e.strerror or e}; the checkpoints saved before are "
    "intact: free space (or inodes) and run the same command to resume"
  )


def workdir_errors() -> tuple:
  """The OSError subclasses whose message is already one complete line."""
  from iclr26_jax.core import metrics as metrics_lib
  from iclr26_jax.core import workdir as workdir_lib

  return (workdir_lib.WorkdirWriteError, metrics_lib.MetricsWriteError)


if __name__ == "__main__":
  _cli.app_run(main, flags_parser=parse_flags)
