"""JAX-native environments of the QAM package."""
