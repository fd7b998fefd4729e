"""AnyBCQ on a tiny byte-level LM: train it, then validation perplexity at FP and 4 / 3 / 2 bits.

  python -m experiments.main --config=experiments/configs/anybcq/lm.py --workdir=/tmp/anybcq_lm
  python -m experiments.main --config=experiments/configs/anybcq/lm.py:smoke --workdir=/tmp/x

``TinyLM`` (``iclr26_jax.anybcq.lm``) trained on the offline standard-library docstring corpus;
at the last step the four Dense kernels of every block are quantized weight-only with AnyBCQ (one
multi-precision model), fixed-precision BCQ and RTN, and ``eval/ppl_<method>_<bits>`` go to
``metrics.jsonl`` next to ``eval/ppl_fp``. ``python -m experiments.anybcq_lm`` prints the same
numbers as a table. Variants: ``smoke`` (a 20-step run of a 1-block width-32 model on a corpus
slice).
"""

from iclr26_jax.anybcq import method
from iclr26_jax.core import config as config_lib


def get_config(arg=None):
  c = method.default_config()  # the trainer's fields (mesh, writers, ...) and these sections
  c.method = "anybcq_lm"
  c.seed = 0  # model initialisation and the batch of step s: rng([seed, s])
  c.num_steps = 2000
  c.batch_size = 32  # random windows of lm.context + 1 bytes per step
  c.log_every = 100
  c.eval_every = 0  # 0: evaluate at the end only
  c.checkpoint_every = 500

  c.optim.name = "adamw"
  c.optim.learning_rate = 3e-3
  c.optim.weight_decay = 0.01
  c.optim.schedule = "warmup_cosine"  # linear warm-up, then cosine decay to 0 at num_steps
  c.optim.warmup_steps = 100
  c.optim.grad_clip = 1.0  # global norm

  c.lm.width = 128  # TinyLM: pre-LN causal transformer over bytes (vocab 256)
  c.lm.depth = 2
  c.lm.heads = 4
  c.lm.mlp_ratio = 4
  c.lm.context = 128

  c.data.train_bytes = 0  # 0: the whole training stream (241,973 bytes); n: its first n
  c.data.eval_windows = 0  # 0: every validation window; n: the first n

  c.quant.methods = ("anybcq", "bcq", "rtn")
  c.quant.bits = (2, 3, 4)
  c.quant.group_size = 128  # along the input dimension (K when smaller)
  c.quant.rounds = 20  # alternating refinement rounds T of BCQ / AnyBCQ
  c.quant.asymmetric = True  # per-group offset beta
  c.quant.eval = "final"  # quantized perplexities: "final" | "every" evaluation | "never"

  smoke = {
    "num_steps": 20,
    "batch_size": 16,
    "log_every": 5,
    "checkpoint_every": 10,
    "optim.warmup_steps": 2,
    "lm.width": 32,
    "lm.depth": 1,
    "lm.heads": 2,
    "lm.mlp_ratio": 1,
    "lm.context": 32,
    "data.train_bytes": 20_000,
    "data.eval_windows": 16,
    "quant.group_size": 32,
    "quant.rounds": 2,
    # fixed BCQ compiles a solver per width (~15 s)
    "quant.methods": ("anybcq", "rtn"),
  }
  return config_lib.experiment(c, arg, {"smoke": smoke}, validate=method.validate)
