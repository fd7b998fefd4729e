"""Pallas kernels (GPU via Triton, TPU via Mosaic) with pure-jnp references. Imports only JAX."""
