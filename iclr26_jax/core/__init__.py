"""The shared training core: configs, distributed init, sharding, state, trainer, checkpoints,
metrics and optimizers. It imports nothing from a method room."""
