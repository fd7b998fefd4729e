"""What the small absl command lines in ``experiments/`` share: one-line errors, flag values as
a dict, results written as ``OUT.md`` and ``OUT.json``.

Each tool defines its flags in a ``define_flags(fv)`` function that runs only when the file is the
program (``if __name__ == "__main__"``), so importing a tool (the tests do, and several tools use
``--out`` or ``--seed``) defines no flags; tests call ``define_flags`` on a fresh
``flags.FlagValues()`` instead.

A bad flag value (absl's parse error, a validator, or an ``app.UsageError`` raised by the tool's
``main``) is reported as one line on stderr, ``error: ... (see --help)``, with exit status 2 and no
usage dump.
"""

from __future__ import annotations

import json
import os
import sys

from absl import app, flags


def _usage_error(message) -> None:
  print(f"error: {' '.join(str(message).split())} (see --help)", file=sys.stderr)
  sys.exit(2)


def parse_flags(argv: list[str]) -> list[str]:
  """``flags.FLAGS(argv)`` with parse errors as one line (exit status 2)."""
  try:
    return flags.FLAGS(argv)
  except flags.Error as e:
    _usage_error(e)


_HELP = ("--help", "-h", "-?", "--helpshort", "--helpfull", "--helpxml")


def app_run(main, **kwargs) -> None:
  """``app.run(main, **kwargs)``, except that ``--help`` exits 0 (absl exits 1 after printing the
  usage, which a shell or a scheduler reads as a failure)."""
  try:
    app.run(main, **kwargs)
  except SystemExit as e:
    if e.code == 1 and any(a in _HELP for a in sys.argv[1:]):
      sys.exit(0)
    raise


def run(main) -> None:
  """``app.run(main)`` with one-line errors for bad flags and ``app.UsageError``."""

  def guarded(argv):
    try:
      return main(argv)
    except app.UsageError as e:
      _usage_error(e)

  app_run(guarded, flags_parser=parse_flags)


def values(fv: flags.FlagValues, names) -> dict:
  """``{name: fv[name].value}`` for the tool's own flags."""
  return {n: fv[n].value for n in names}


def no_arguments(argv: list[str]) -> None:
  """Raises ``app.UsageError`` for positional arguments (every tool takes flags only)."""
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")


def write_results(out: str, text: str, record: dict) -> None:
  """Writes ``out.md`` (``text`` and a newline) and ``out.json`` (``record``; int keys become
  strings, other non-JSON values ``str``), creating the folder."""
  folder = os.path.dirname(out)
  if folder:
    os.makedirs(folder, exist_ok=True)
  with open(out + ".md", "w") as f:
    f.write(text + "\n")
  with open(out + ".json", "w") as f:
    json.dump(record, f, indent=2, default=str)
