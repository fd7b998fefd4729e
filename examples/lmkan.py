"""lmKAN in a plain Flax/optax loop, bf16 compute on f32 tables: fit y = sin(2·x0)·x1 + cos(x2 + x3)
with BatchNorm → LMKANDense layers (make_network) and the paper's recipe (recipe_optimizer)."""

import sys

import jax, jax.numpy as jnp, optax  # noqa: E401

from iclr26_jax import lmkan

steps = 60 if "--tiny" in sys.argv else 1500
target = lambda x: jnp.sin(2 * x[:, 0]) * x[:, 1] + jnp.cos(x[:, 2] + x[:, 3])
net = lmkan.make_network((16, 1), grid_size=8, dtype=jnp.bfloat16)  # f32 tables
tx, _ = lmkan.recipe_optimizer(steps, lr=3e-2)  # two-phase LR and Hessian λ, Adam
variables = net.init(jax.random.key(0), jnp.zeros((2, 4)))
params, stats = variables["params"], variables["batch_stats"]
opt = tx.init(params)


def loss_fn(p, s, x):
  out, mut = net.apply({"params": p, "batch_stats": s}, x, train=True, mutable=["batch_stats"])
  return jnp.mean((out[:, 0].astype(jnp.float32) - target(x)) ** 2), mut["batch_stats"]


@jax.jit
def train_step(p, s, o, key):
  x = jax.random.normal(key, (512, 4))
  (loss, s), g = jax.value_and_grad(loss_fn, has_aux=True)(p, s, x)
  upd, o = tx.update(g, o, p)  # the Hessian penalty needs params
  return optax.apply_updates(p, upd), s, o, loss


for k in jax.random.split(jax.random.key(1), steps):
  params, stats, opt, loss = train_step(params, stats, opt, k)
xt = jax.random.normal(jax.random.key(2), (8192, 4))
pred = net.apply({"params": params, "batch_stats": stats}, xt)[:, 0].astype(jnp.float32)
mse_over_var = jnp.mean((pred - target(xt)) ** 2) / jnp.var(target(xt))
print(f"lmKAN 4->16->1 in bf16, {steps} steps: test MSE/Var {float(mse_over_var):.3f}")
if "--tiny" in sys.argv:
  print("(--tiny only checks that the code runs: these numbers are not the method's result)")
