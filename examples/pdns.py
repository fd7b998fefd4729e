"""PDNS on a 2-D banana density: log Z against a grid integral, and samples on the ridge."""

import sys

import jax
import jax.numpy as jnp
import numpy as np

from iclr26_jax import pdns


def log_density(x):  # a banana: x2 ~ N(x1^2 / 2, 0.5^2) given x1 ~ N(0, 1), times e^2
  return -0.5 * x[0] ** 2 - 0.5 * ((x[1] - 0.5 * x[0] ** 2) / 0.5) ** 2 + 2.0


tiny = "--tiny" in sys.argv
small = dict(num_stages=2, refine_stages=1, epochs_per_stage=2, buffer_size=512, hidden=32)
fitted = pdns.fit_sampler(log_density, 2, key=jax.random.key(0), **(small if tiny else {}))

g = np.linspace(-8, 12, 801)
grid = jnp.asarray(np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2))
log_z_grid = float(jax.nn.logsumexp(jax.vmap(log_density)(grid)) + 2 * np.log(g[1] - g[0]))
x = np.asarray(fitted.sample(jax.random.key(1), 4096))
ridge = np.mean(np.abs(x[:, 1] - 0.5 * x[:, 0] ** 2) < 1.0)  # exact: P(|N(0, .25)| < 1) = 0.954
print(f"log Z: PDNS {fitted.log_z:.3f}, grid {log_z_grid:.3f}; ESS {fitted.ess:.3f}")
print(f"fraction of samples within 1 of the ridge: {ridge:.3f} (exact 0.954)")
if tiny:
  print("(--tiny only checks that the code runs: these numbers are not the method's result)")
