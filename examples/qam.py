"""QAM on a one-step task of its own: 1-D context s, 1-D action, best action 0.8 sin(pi s).

The rewards are used at their own scale: ``train_offline`` rescales them (``reward_scale="auto"``)
so that the default tilt lambda = 0.3 works whatever their unit.
"""

import sys

import jax
import numpy as np

from iclr26_jax import qam

tiny = "--tiny" in sys.argv
rng = np.random.default_rng(0)
n = 2048
s = rng.uniform(-1, 1, (n, 1)).astype(np.float32)
best = lambda s: 0.8 * np.sin(np.pi * s)  # noqa: E731
a = rng.uniform(-1, 1, (n, 1)).astype(np.float32)  # behaviour: uniform random actions
dataset = {
  "observations": s,
  "actions": a,
  "rewards": (-((a - best(s))[:, 0] ** 2)).astype(np.float32),
  "terminals": np.ones(n, np.float32),  # every transition is its own episode
}
config = {"horizon": 1, "num_qs": 2, "actor_hidden_dims": (64, 64), "critic_hidden_dims": (64, 64)}
if tiny:
  config.update(actor_hidden_dims=(16,), critic_hidden_dims=(16,), flow_steps=4)
agent = qam.train_offline(
  dataset, key=jax.random.key(0), num_updates=20 if tiny else 1500, batch_size=128, config=config
)
test_s = np.linspace(-1, 1, 512, dtype=np.float32)[:, None]
acts = np.asarray(agent.sample_actions(test_s, jax.random.key(1)))[:, 0]
print(f"mean |a - a*|: behaviour data {np.mean(np.abs(a - best(s))):.3f}, ", end="")
print(f"QAM policy {np.mean(np.abs(acts - best(test_s))):.3f}")
if tiny:
  print("(--tiny only checks that the code runs: these numbers are not the method's result)")
