"""Shared Flax Linen building blocks of the method packages: MLPs and time embeddings.

A floor under the method packages: every method package may import ``iclr26_jax.nn``; it imports no
method package (nor the training core). Modules: ``feedforward`` (``mlp``, a function that builds a
Dense stack inside the calling module's compact scope, and ``MLP``, its module wrapper) and
``embeddings`` (``sinusoidal_embedding``, ``fourier_time_features``).

Parameter paths are part of the contract: ``mlp`` creates its layers in the caller's scope with the
names an inline loop of ``nn.Dense`` calls gets (``Dense_0, Dense_1, ...`` or the given ``names``),
so a module that switches to it keeps its parameter tree, its init values (Flax derives init keys
from module paths) and its checkpoints.

The names in ``__all__`` are imported from their module on first access (PEP 562), so importing
this package imports neither jax nor flax.
"""

from iclr26_jax._lazy import lazy_exports

# Exported name -> the module that defines it.
_EXPORTS = {
  "mlp": "feedforward",
  "MLP": "feedforward",
  "sinusoidal_embedding": "embeddings",
  "fourier_time_features": "embeddings",
}

__all__ = ["MLP", "fourier_time_features", "mlp", "sinusoidal_embedding"]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
