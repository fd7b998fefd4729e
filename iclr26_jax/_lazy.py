"""Lazy package exports (PEP 562), shared by the method packages' ``__init__`` modules.

A package lists ``{exported name: submodule}`` and gets a module ``__getattr__`` that imports the
submodule on first access (then caches the name in the package namespace) and a ``__dir__`` that
lists the lazy names, so importing the package stays cheap (config files import ``core.config``
before jax is wanted). Imports nothing itself.
"""

import importlib
from typing import Callable


def lazy_exports(
  package: str, exports: dict[str, str], namespace: dict
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
  """``(__getattr__, __dir__)`` for ``package`` (its ``__name__``) whose names ``exports`` maps to
  submodules; ``namespace`` is the package's ``globals()``. An unknown name raises
  AttributeError as a plain module would."""

  def __getattr__(name: str):
    if name not in exports:
      raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
    namespace[name] = value  # later accesses skip __getattr__
    return value

  def __dir__() -> list[str]:
    return sorted(set(namespace) | set(exports))

  return __getattr__, __dir__
