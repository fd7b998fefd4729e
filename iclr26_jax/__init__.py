"""iclr26_jax: six ICLR 2026 methods on one pure-functional JAX training core.

Packages: ``core`` (the shared training core) and one package per method: ``qam``, ``minpv``,
``pdns``, ``dsb``, ``lmkan`` and ``anybcq``. ``nn`` holds the Flax building blocks the method
packages share (``mlp`` / ``MLP`` and the time embeddings); it imports no method package, and each
builds its own networks from it. The Pallas kernels are the top-level ``kernels_pallas`` package.
Nothing here touches a device at import time.
"""

__version__ = "0.1.0"
