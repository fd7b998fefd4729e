"""Helpers shared by test files of more than one subject (pytest collects no test here).

- The requirement locks: ``LOCK``, ``LOCK_COMPILE`` and ``read_lock``, their pins by name.
- Runs of the toy regression, the oracle of the run-level tests: ``wide_toy_config`` (10 steps,
  checkpoints 5 and 10, one 256-wide layer) and ``resume_toy_config`` (30 steps, checkpoints every
  10), ``train_toy`` to run one, ``restore_toy`` to read a run's newest checkpoint back onto one
  device, ``assert_same_state`` for bitwise equality of two final states.
- Faults and what they leave: ``flip_leaf_bytes`` damages a checkpoint's array data where only
  a digest can see it, ``snapshot`` hashes every file of a workdir (equal snapshots: nothing was
  written), ``stderr_lines`` keeps the non-empty lines of a child's stderr.
- ``free_port``: a localhost port for a multi-process coordinator.
- The link between a method page's "Accuracy at the defaults" and the tests that hold it:
  ``accuracy_section`` reads the subsection, ``assert_page_cites_existing_tests`` (called by each
  ``tests/<method>/test_<method>_contract.py``) checks every test it cites exists.

jax, the library and the configs are imported inside the functions that use them: importing this
module (as ``tests/harness/test_lock.py`` does) loads none of them, and a test folder's conftest.py can set
``XLA_FLAGS`` before jax is first imported.
"""

import ast
import glob
import hashlib
import os
import re
import socket

from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.conftest import REPO

LOCK = os.path.join(REPO, "requirements", "lock.txt")
LOCK_COMPILE = os.path.join(REPO, "requirements", "lock-compile.txt")

# The toy runs of wide_toy_config (before its 256-wide layer) and resume_toy_config.
WIDE_TOY_BASE = "smoke,num_steps=10,checkpoint_every=5,log_every=5,progress_bar=False,mesh.data=1"
RESUME_TOY_BASE = "num_steps=30,checkpoint_every=10,log_every=5,batch_size=32,progress_bar=False"

# A method page's subsection that cites the tests holding its accuracy, and one citation there.
ACCURACY_SECTION = "### Accuracy at the defaults"
ACCURACY_CITATION = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def read_lock(path: str) -> dict[str, Version]:
  """``{canonical name: pinned version}`` of a lock file; asserts every line is ``name==version``
  and no name is pinned twice."""
  pins = {}
  with open(path) as f:
    for line in f:
      line = line.strip()
      if not line or line.startswith("#"):
        continue
      m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^\s;]+)", line)
      assert m, f"{os.path.basename(path)}: not a pin: {line!r}"
      name = canonicalize_name(m.group(1))
      assert name not in pins, f"{os.path.basename(path)} pins {name} twice"
      pins[name] = Version(m.group(2))
  return pins


def wide_toy_config(extra=""):
  """The toy regression's smoke config, 10 steps with checkpoints 5 and 10 on one device, and
  ``extra`` (``key=value,...``) applied after; its hidden layer is 256 wide."""
  from experiments.configs.toy import regression

  cfg = regression.get_config(WIDE_TOY_BASE + ("," + extra if extra else ""))
  # One 8 x 256 hidden layer: Orbax (OCDBT) stores a value this large in a data file of its own
  # with no checksum, where flipped bytes restore silently without a digest (values of a few
  # hundred bytes sit in checksummed index nodes and fail to read instead).
  cfg.toy.hidden = (256,)
  return cfg


def resume_toy_config(extra=""):
  """The toy regression's smoke config, 30 steps with checkpoints every 10 and logs every 5, batch
  32, and ``extra`` (``key=value,...``) applied after."""
  from experiments.configs.toy import regression

  return regression.get_config("smoke," + RESUME_TOY_BASE + ("," + extra if extra else ""))


def train_toy(cfg, work, **kw):
  """``trainer.train`` of the toy regression of ``cfg`` in workdir ``work``."""
  from experiments import toy
  from iclr26_jax.core import trainer

  return trainer.train(toy.ToyRegression(cfg), cfg, str(work), **kw)


def restore_toy(workdir, arg: str):
  """``(step, arrays)`` of the newest checkpoint of a toy run made with config ``arg``
  (restored onto one device, whatever topology wrote it)."""
  import jax

  from experiments import toy
  from experiments.configs.toy import regression
  from iclr26_jax.core import sharding as shd
  from iclr26_jax.core.checkpoint import Checkpointer, abstract_like

  method = toy.ToyRegression(regression.get_config(arg))
  abstract = jax.eval_shape(method.init_state, jax.random.PRNGKey(0)).arrays()
  rep = shd.replicated(shd.make_mesh({"data": 1}))
  ck = Checkpointer(os.path.join(workdir, "checkpoints"))
  try:
    return ck.restore(abstract_like(abstract, jax.tree.map(lambda _: rep, abstract)))
  finally:
    ck.close()


def assert_same_state(a, b):
  """Two ``TrainState``s hold the same arrays, dtype and bytes, leaf by leaf."""
  import jax
  import numpy as np

  ja = jax.tree.leaves(jax.tree.map(np.asarray, a.arrays()))
  jb = jax.tree.leaves(jax.tree.map(np.asarray, b.arrays()))
  assert len(ja) == len(jb)
  for x, y in zip(ja, jb):
    assert x.dtype == y.dtype and x.tobytes() == y.tobytes()


def flip_leaf_bytes(work, step):
  """Flips 8 bytes in the middle of the largest data file of checkpoint ``step``: the kernel's
  values (the file is a zstd frame of them; zstd keeps no checksum and OCDBT none for a value
  stored in a file of its own, so without a digest this restores silently as wrong numbers).
  tests/faults/test_integrity.py's ``test_flipped_newest...`` checks the restore reports a digest
  mismatch, not a read error."""
  files = glob.glob(str(work / "checkpoints" / str(step) / "**" / "d" / "*"), recursive=True)
  f = max(files, key=os.path.getsize)
  data = bytearray(open(f, "rb").read())
  assert len(data) > 4096, f"{f}: {len(data)} bytes; the kernel is stored elsewhere"
  mid = len(data) // 2
  for i in range(mid, mid + 8):
    data[i] ^= 0x5A
  open(f, "wb").write(bytes(data))


def snapshot(work):
  """``{relative path: sha256}`` of every file under ``work``."""
  out = {}
  for p in sorted(glob.glob(os.path.join(str(work), "**"), recursive=True)):
    if os.path.isfile(p):
      out[os.path.relpath(p, work)] = hashlib.sha256(open(p, "rb").read()).hexdigest()
  return out


def stderr_lines(stderr: str) -> list[str]:
  """The non-empty lines of ``stderr``. absl's log lines stay in: none are expected, and a
  failing assertion shows them."""
  return [ln for ln in stderr.splitlines() if ln.strip()]


def free_port():
  """A free TCP port on 127.0.0.1 (free when asked; the caller binds it soon after)."""
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def accuracy_section(method: str) -> str:
  """The text of the page's "Accuracy at the defaults" subsection, which must sit under
  "Use it on your own problem"."""
  text = open(os.path.join(REPO, "docs", "methods", f"{method}.md"), encoding="utf-8").read()
  start = text.index("## Use it on your own problem")
  end = text.find("\n## ", start + 1)
  use = text[start : end if end >= 0 else len(text)]
  assert ACCURACY_SECTION in use, (
    f"{method}.md: no '{ACCURACY_SECTION}' under 'Use it on your own problem'"
  )
  sub = use[use.index(ACCURACY_SECTION) + len(ACCURACY_SECTION) :]
  nxt = sub.find("\n### ")
  return sub if nxt < 0 else sub[:nxt]


def assert_page_cites_existing_tests(method: str) -> list[tuple[str, str]]:
  """Every ``tests/...py::name`` the subsection cites is a test function of that file (read with
  ``ast``, nothing imported); at least one is cited. Returns the citations."""
  cited = ACCURACY_CITATION.findall(accuracy_section(method))
  assert cited, f"{method}.md: '{ACCURACY_SECTION}' names no test (`tests/...py::test_name`)"
  for path, name in cited:
    full = os.path.join(REPO, path)
    assert os.path.exists(full), f"{method}.md cites {path}, which does not exist"
    tree = ast.parse(open(full, encoding="utf-8").read())
    tests = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert name.startswith("test_") and name in tests, (
      f"{method}.md cites {path}::{name}: no such test"
    )
  return cited
