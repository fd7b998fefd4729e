"""An offline text corpus from the Python standard library's docstrings, and a byte-level tokenizer.

Used by the AnyBCQ package's tiny-LM evaluation; nothing is downloaded. Every docstring line of a
fixed list of standard-library modules (``TRAIN_MODULES``, ``VALID_MODULES``: the split is by
module), in a deterministic order, is a document; a line is kept only at its first occurrence. The
tokenizer is the UTF-8 bytes (``encode`` / ``decode``, vocabulary 256). The exact text depends on
the Python version; within one interpreter it is fixed. The rules of order and cleaning:
docs/methods/anybcq.md ("Configuration and logged metrics").
"""

from __future__ import annotations

import importlib
import inspect
from typing import NamedTuple, Sequence

import numpy as np

__all__ = [
  "TRAIN_MODULES",
  "VALID_MODULES",
  "VOCAB_SIZE",
  "Corpus",
  "module_lines",
  "load_corpus",
  "encode",
  "decode",
]

TRAIN_MODULES = (
  "argparse",
  "collections",
  "contextlib",
  "csv",
  "dataclasses",
  "difflib",
  "email.message",
  "fractions",
  "functools",
  "heapq",
  "inspect",
  "json.decoder",
  "json.encoder",
  "logging",
  "pathlib",
  "pprint",
  "random",
  "shutil",
  "statistics",
  "string",
  "subprocess",
  "tarfile",
  "textwrap",
  "threading",
  "typing",
  "unittest.case",
  "urllib.parse",
  "zipfile",
)
VALID_MODULES = (
  "calendar",
  "configparser",
  "ftplib",
  "gettext",
  "smtplib",
  "socketserver",
  "tempfile",
)
VOCAB_SIZE = 256


def _own_doc(obj) -> str | None:
  doc = obj.__dict__.get("__doc__") if hasattr(obj, "__dict__") else None
  if doc is None and not inspect.isclass(obj):
    doc = getattr(obj, "__doc__", None)
  return doc if isinstance(doc, str) else None


def _split(doc: str | None) -> list[str]:
  if not doc:
    return []
  return [s.strip() for s in inspect.cleandoc(doc).splitlines() if s.strip()]


def module_lines(name: str) -> list[str]:
  """Docstring lines of one standard-library module, in the deterministic order described above."""
  mod = importlib.import_module(name)
  lines = _split(_own_doc(mod))
  for attr in sorted(vars(mod)):
    if attr.startswith("_"):
      continue
    obj = vars(mod)[attr]
    if not (inspect.isclass(obj) or inspect.isfunction(obj)):
      continue
    if getattr(obj, "__module__", None) != mod.__name__:
      continue
    lines += _split(_own_doc(obj))
    if inspect.isclass(obj):
      for m in sorted(vars(obj)):
        if m.startswith("__") and m != "__init__":
          continue
        member = vars(obj)[m]
        if isinstance(member, (staticmethod, classmethod)):
          member = member.__func__
        if isinstance(member, property):
          member = member.fget
        if inspect.isfunction(member):
          lines += _split(member.__doc__)
  return lines


class Corpus(NamedTuple):
  """Train / validation lines (disjoint line sets, disjoint source modules)."""

  train: tuple[str, ...]
  valid: tuple[str, ...]

  def train_bytes(self) -> np.ndarray:
    """The training text as one uint8 stream, lines joined by newlines."""
    return encode("\n".join(self.train) + "\n")

  def valid_bytes(self) -> np.ndarray:
    return encode("\n".join(self.valid) + "\n")


def load_corpus(
  train_modules: Sequence[str] = TRAIN_MODULES, valid_modules: Sequence[str] = VALID_MODULES
) -> Corpus:
  """Builds the corpus; a line is kept only at its first occurrence (train modules first).

  Raises:
    ValueError: a module appears in both lists.
  """
  both = sorted(set(train_modules) & set(valid_modules))
  if both:
    raise ValueError(f"train_modules and valid_modules overlap: {both}")
  seen: set[str] = set()
  out = []
  for names in (train_modules, valid_modules):
    kept = []
    for name in names:
      for line in module_lines(name):
        if line not in seen:
          seen.add(line)
          kept.append(line)
    out.append(tuple(kept))
  return Corpus(*out)


def encode(text: str) -> np.ndarray:
  """UTF-8 bytes as token ids: uint8 ``(len(bytes),)`` (vocabulary ``VOCAB_SIZE`` = 256)."""
  if not isinstance(text, str):
    raise ValueError(f"encode: text must be a str; got {type(text).__name__}")
  return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).copy()


def decode(tokens) -> str:
  """Inverse of ``encode`` (ids must lie in [0, 255])."""
  arr = np.asarray(tokens)
  if arr.ndim != 1 or (arr.size and (arr.min() < 0 or arr.max() >= VOCAB_SIZE)):
    raise ValueError(
      f"decode: tokens must be a 1-D array of ids in [0, {VOCAB_SIZE}); got shape {arr.shape}"
    )
  return arr.astype(np.uint8).tobytes().decode("utf-8")
