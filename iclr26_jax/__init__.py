"""iclr26_jax: six ICLR 2026 methods on one pure-functional JAX training core.

Rooms: ``core`` (shared training core), ``nn`` (shared Flax modules) and one package per
method. Nothing here touches a device at import time.
"""

__version__ = "0.1.0"
