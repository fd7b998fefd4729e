"""A tiny byte-level causal transformer LM for evaluating AnyBCQ end to end (validation perplexity).

The laptop-scale mirror of the perplexity table of AnyBCQ (Park et al., ICLR 2026, arXiv
2510.10467, Table 6; code github.com/naver-aics/anybcq): ``TinyLM`` trained on the offline
docstring corpus (``anybcq.corpus``), the four Dense kernels of every block (``BLOCK_LINEARS``)
quantized weight-only by ``"anybcq"`` (one multi-precision model), ``"bcq"`` or ``"rtn"``
(``quantize_lm``), and ``perplexity`` at each width. Training goes through the shared trainer
(``anybcq.method``); ``quantize_kernels``, ``get_path`` and ``set_path`` are re-exported from
``anybcq.tree``. The model, the run and its table: docs/methods/anybcq.md ("Configuration and
logged metrics").
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from iclr26_jax.anybcq import corpus as corpus_lib
from iclr26_jax.anybcq.tree import METHODS, get_path, quantize_kernels, set_path

__all__ = [
  "LMConfig",
  "TinyLM",
  "BLOCK_LINEARS",
  "METHODS",
  "init_lm",
  "lm_logits",
  "perplexity",
  "token_nll",
  "eval_windows",
  "get_path",
  "set_path",
  "quantize_kernels",
  "quantize_lm",
  "block_kernel_paths",
]

BLOCK_LINEARS = ("qkv", "attn_out", "mlp_in", "mlp_out")


@dataclasses.dataclass(frozen=True)
class LMConfig:
  """Tiny causal LM hyperparameters (hashable: used as a static jit argument)."""

  vocab: int = corpus_lib.VOCAB_SIZE
  width: int = 128
  depth: int = 2
  heads: int = 4
  mlp_ratio: int = 4
  context: int = 128

  def __post_init__(self):
    for f in ("vocab", "width", "depth", "heads", "mlp_ratio", "context"):
      v = getattr(self, f)
      if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ValueError(f"LMConfig.{f} must be a positive int; got {v!r}")
    if self.width % self.heads:
      raise ValueError(f"LMConfig.width = {self.width} must be divisible by heads = {self.heads}")


class Block(nn.Module):
  """Pre-LN transformer block: x + Attn(LN(x)), then x + MLP(LN(x)). x: ``(B, T, width)``."""

  cfg: LMConfig

  @nn.compact
  def __call__(self, x):
    c = self.cfg
    b, t, d = x.shape
    hd = d // c.heads
    h = nn.LayerNorm(name="ln_attn")(x)
    qkv = nn.Dense(3 * d, name="qkv")(h).reshape(b, t, 3, c.heads, hd)
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]  # (B, T, H, hd)
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(hd)
    causal = jnp.tril(jnp.ones((t, t), bool))
    s = jnp.where(causal, s, jnp.finfo(s.dtype).min)
    a = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, axis=-1), v).reshape(b, t, d)
    x = x + nn.Dense(d, name="attn_out")(a)
    h = nn.LayerNorm(name="ln_mlp")(x)
    h = nn.gelu(nn.Dense(c.mlp_ratio * d, name="mlp_in")(h))
    return x + nn.Dense(d, name="mlp_out")(h)


class TinyLM(nn.Module):
  """Byte-level causal LM: tokens ``(B, T)`` int (T <= context) -> logits ``(B, T, vocab)``."""

  cfg: LMConfig

  @nn.compact
  def __call__(self, tokens):
    c = self.cfg
    t = tokens.shape[1]
    x = nn.Embed(c.vocab, c.width, name="embed")(tokens)
    pos = self.param("pos", nn.initializers.normal(0.02), (c.context, c.width))
    x = x + pos[:t]
    for i in range(c.depth):
      x = Block(c, name=f"block_{i}")(x)
    x = nn.LayerNorm(name="ln_f")(x)
    return nn.Dense(c.vocab, name="head")(x)


def init_lm(cfg: LMConfig, seed: int = 0):
  """Initial parameters ``{"params": ...}`` of ``TinyLM(cfg)``."""
  return TinyLM(cfg).init(jax.random.PRNGKey(seed), jnp.zeros((1, cfg.context), jnp.int32))


@functools.partial(jax.jit, static_argnums=0)
def lm_logits(cfg: LMConfig, params, tokens):
  """Logits ``(B, T, vocab)`` of tokens ``(B, T)``."""
  return TinyLM(cfg).apply(params, tokens)


def _token_nll(cfg, params, tokens):
  logits = TinyLM(cfg).apply(params, tokens[:, :-1])
  logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
  return -jnp.take_along_axis(logp, tokens[:, 1:, None], axis=-1)[..., 0]


def _mean_nll(cfg, params, tokens):
  return jnp.mean(_token_nll(cfg, params, tokens))


token_nll = jax.jit(_token_nll, static_argnums=0)
token_nll.__doc__ = """Per-position next-token NLL ``(B, L - 1)`` of tokens ``(B, L)`` (nats)."""


def check_tokens(tokens, cfg: LMConfig) -> jnp.ndarray:
  arr = np.asarray(tokens)
  if arr.ndim != 2 or arr.shape[1] < 2 or arr.shape[1] > cfg.context + 1:
    raise ValueError(
      f"tokens must be (B, L) with 2 <= L <= context + 1 = {cfg.context + 1}; got shape {arr.shape}"
    )
  if not np.issubdtype(arr.dtype, np.integer) or arr.min() < 0 or arr.max() >= cfg.vocab:
    raise ValueError(f"tokens must be integer ids in [0, {cfg.vocab})")
  return jnp.asarray(arr, jnp.int32)


def perplexity(params, tokens, cfg: LMConfig = LMConfig()) -> float:
  """exp(mean next-token NLL) over every predicted position of ``tokens`` ``(B, L)``.

  Each row predicts tokens[:, 1:] from tokens[:, :-1] (L - 1 <= context). The per-token NLLs are
  averaged on the host in float64 (a float32 on-device mean of thousands of terms drifts).
  """
  per_tok = np.asarray(token_nll(cfg, params, check_tokens(tokens, cfg)), np.float64)
  return float(np.exp(per_tok.mean()))


def eval_windows(stream, context: int) -> np.ndarray:
  """Non-overlapping windows ``(n, context + 1)`` of a token stream, consecutive windows sharing one
  boundary token, so every token after the first is predicted exactly once (a trailing partial
  window is dropped)."""
  stream = np.asarray(stream)
  n = (stream.size - 1) // context
  if n < 1:
    raise ValueError(f"stream of {stream.size} tokens is shorter than context + 1 = {context + 1}")
  idx = np.arange(n)[:, None] * context + np.arange(context + 1)[None, :]
  return stream[idx].astype(np.int32)


def block_kernel_paths(cfg: LMConfig) -> list[tuple[str, str]]:
  """(block, linear) names of every quantized Dense kernel, in model order."""
  return [(f"block_{i}", name) for i in range(cfg.depth) for name in BLOCK_LINEARS]


def quantize_lm(
  params,
  method: str,
  bits: Sequence[int] = (2, 3, 4),
  group_size: int = 128,
  rounds: int = 20,
  asymmetric: bool = True,
  cfg: LMConfig | None = None,
) -> dict[int, dict]:
  """Quantizes every block linear of a ``TinyLM`` (embedding, positions and head stay FP).

  Returns ``{p: params_p}``; see ``quantize_kernels`` for ``method`` and the settings.
  """
  depth = sum(1 for k in params["params"] if k.startswith("block_")) if cfg is None else cfg.depth
  paths = [(f"block_{i}", n) for i in range(depth) for n in BLOCK_LINEARS]
  return quantize_kernels(params, paths, method, bits, group_size, rounds, asymmetric)


if __name__ == "__main__":  # the command line moved to experiments/ (absl flags)
  import shlex
  import sys

  print(
    f"iclr26_jax.anybcq.lm is a library module; its command line moved: "
    f"python -m experiments.anybcq_lm {shlex.join(sys.argv[1:])}".rstrip(),
    file=sys.stderr,
  )
  sys.exit(2)
