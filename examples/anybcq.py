"""AnyBCQ on an MLP of its own (input width 50): train it, quantize once, run at 2 / 3 / 4 bits."""

import sys

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from iclr26_jax import anybcq

tiny = "--tiny" in sys.argv
model = nn.Sequential([nn.Dense(96), nn.gelu, nn.Dense(96), nn.gelu, nn.Dense(4)])
x = jax.random.normal(jax.random.key(0), (512, 50))  # input width 50: not a multiple of 32
w = jax.random.normal(jax.random.key(1), (50, 4)) / 7.0
y = jnp.sin(3.0 * x @ w)
params = model.init(jax.random.key(2), x)
tx = optax.adam(3e-3)
opt = tx.init(params)
loss = lambda p: jnp.mean((model.apply(p, x) - y) ** 2)  # noqa: E731


@jax.jit
def step(p, o):
  g = jax.grad(loss)(p)
  u, o = tx.update(g, o)
  return optax.apply_updates(p, u), o


for _ in range(50 if tiny else 1500):
  params, opt = step(params, opt)
q = anybcq.quantize_params(params, bits=(2, 3, 4), rounds=4 if tiny else 20)
ref = model.apply(params, x)
print(f"float32 MSE {float(loss(params)):.4f}")
for b in (2, 3, 4):
  out = model.apply(anybcq.dequantize_params(q, b), x)
  rel = float(jnp.linalg.norm(out - ref) / jnp.linalg.norm(ref))
  print(f"{b} bits: MSE {float(loss(anybcq.dequantize_params(q, b))):.4f}, output error {rel:.3f}")
if tiny:
  print("(--tiny only checks that the code runs: these numbers are not the method's result)")
