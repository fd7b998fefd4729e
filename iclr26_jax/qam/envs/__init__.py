"""JAX-native environments of the QAM room."""
