"""Which fields of a config does code read? ``recording(cfg)`` patches ``ConfigDict`` reads.

Used by ``test_config_fields.py``: a read is a ``__getitem__`` (attribute access, ``get``,
``items`` all go through it) of a leaf of ``cfg`` or of a copy of one of its sections (a section
turned into a dict by ``to_dict()`` and back into a ``ConfigDict``, as QAM's ``with_fields``
does, or frozen with ``FrozenConfigDict``, keeps its dotted prefix). A section handed on as a
plain dict (``**cfg.hparams.to_dict()``) counts as read whole. Reads inside the range checks
(``core.config.check_range``, ``require``) do not count: a field that is only checked is still
unused. Serialisation (JSON, repr, eq) and copies do not count either.
"""

from __future__ import annotations

import contextlib

import ml_collections

from iclr26_jax.core import config as config_lib

CD = ml_collections.ConfigDict


class Reads:
  def __init__(self, cfg: CD):
    self.prefix: dict[int, str] = {}
    self.keep: list = []  # keeps mapped objects alive, so their ids are not reused
    self.read: set[str] = set()
    self.pending: dict[int, tuple[dict, str]] = {}  # to_dict results not (yet) made a ConfigDict
    self.consumed: set[int] = set()
    self.quiet = 0
    self._map(cfg, "")

  def _map(self, node: CD, prefix: str) -> None:
    self.prefix[id(node)] = prefix
    self.keep.append(node)
    for k, v in node._fields.items():
      if isinstance(v, CD):
        self._map(v, f"{prefix}{k}.")

  def _register(self, d: dict, prefix: str) -> None:
    self.pending[id(d)] = (d, prefix)
    self.keep.append(d)
    for k, v in d.items():
      if isinstance(v, dict):
        self._register(v, f"{prefix}{k}.")

  def _leaves(self, d: dict, prefix: str):
    for k, v in d.items():
      if isinstance(v, dict):
        yield from self._leaves(v, f"{prefix}{k}.")
      else:
        yield f"{prefix}{k}"

  def finish(self) -> set[str]:
    """Every leaf read, with the sections handed on as plain dicts counted whole."""
    out = set(self.read)
    for i, (d, prefix) in self.pending.items():
      if i not in self.consumed:
        out.update(self._leaves(d, prefix))
    return out


@contextlib.contextmanager
def recording(cfg: CD):
  """Records the leaf reads of ``cfg`` (dotted keys) into the yielded ``Reads``."""
  rec = Reads(cfg)
  saved = {}

  def patch(owner, name, fn):
    saved[(owner, name)] = getattr(owner, name)
    setattr(owner, name, fn)

  orig_getitem = CD.__getitem__
  orig_to_dict = CD.to_dict
  orig_init = CD.__init__

  def getitem(self, key):
    value = orig_getitem(self, key)
    if rec.quiet or not isinstance(key, str) or "." in key:
      return value
    prefix = rec.prefix.get(id(self))
    if prefix is not None and not isinstance(value, CD):
      rec.read.add(prefix + key)
    return value

  def to_dict(self, visit_map=None, preserve_field_references=False):
    if rec.quiet or visit_map is not None:
      return orig_to_dict(self, visit_map, preserve_field_references)
    rec.quiet += 1
    try:
      d = orig_to_dict(self, visit_map, preserve_field_references)
    finally:
      rec.quiet -= 1
    prefix = rec.prefix.get(id(self))
    if prefix is not None:
      rec._register(d, prefix)
    return d

  def init(self, initial_dictionary=None, *args, **kwargs):
    orig_init(self, initial_dictionary, *args, **kwargs)
    if isinstance(initial_dictionary, dict) and id(initial_dictionary) in rec.pending:
      rec.consumed.add(id(initial_dictionary))
      rec.prefix[id(self)] = rec.pending[id(initial_dictionary)][1]
      rec.keep.append(self)
    elif isinstance(initial_dictionary, CD) and id(initial_dictionary) in rec.prefix:
      rec._map(self, rec.prefix[id(initial_dictionary)])

  orig_frozen_init = ml_collections.FrozenConfigDict.__init__

  def frozen_init(self, initial_dictionary=None, *args, **kwargs):
    # A frozen copy (``FrozenConfigDict(cfg)``, e.g. a static field of a flax struct) reads
    # every field to copy it: not a use; reads of the copy count under the original's prefix.
    rec.quiet += 1
    try:
      orig_frozen_init(self, initial_dictionary, *args, **kwargs)
    finally:
      rec.quiet -= 1
    if id(initial_dictionary) in rec.prefix:
      rec._map(self, rec.prefix[id(initial_dictionary)])

  def quietly(fn):
    def wrapped(*args, **kwargs):
      rec.quiet += 1
      try:
        return fn(*args, **kwargs)
      finally:
        rec.quiet -= 1

    return wrapped

  patch(CD, "__getitem__", getitem)
  patch(CD, "to_dict", to_dict)
  patch(CD, "__init__", init)
  patch(ml_collections.FrozenConfigDict, "__init__", frozen_init)
  for name in ("to_json", "to_json_best_effort", "__repr__", "__str__", "__eq__"):
    patch(CD, name, quietly(getattr(CD, name)))
  for name in ("check_range", "require", "lookup"):
    patch(config_lib, name, quietly(getattr(config_lib, name)))
  try:
    yield rec
  finally:
    for (owner, name), fn in saved.items():
      setattr(owner, name, fn)
