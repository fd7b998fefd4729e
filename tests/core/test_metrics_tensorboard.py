"""The TensorBoard metric writer (``config.writers``) against the JSON lines log.

Event files are read back without tensorflow or tensorboardX's reader: the TFRecord framing
(8-byte little-endian length, masked CRC-32C of it, payload, masked CRC-32C of the payload) is
parsed here, the CRCs are checked with a CRC-32C written here, and only the ``Event`` protobuf
class comes from ``tensorboardX.proto``. What TensorBoard shows is modelled by both of its
loaders: the Python one (a ``SessionLog.START`` at step p discards the points at steps >= p read
so far) and the data server (per tag, a point at step s discards earlier points at steps >= s).
"""

import os
import struct
import sys

import numpy as np
import pytest

from experiments.configs.toy import regression
from iclr26_jax.core import config as config_lib
from iclr26_jax.core import metrics as metrics_lib
from experiments import toy
from iclr26_jax.core import trainer
from iclr26_jax.core import workdir as workdir_lib
from tests.conftest import Kill, kill_at

pytest.importorskip("tensorboardX")
from tensorboardX.proto import event_pb2  # noqa: E402

BASE = (
  "smoke,num_steps=30,checkpoint_every=10,log_every=5,eval_every=5,batch_size=32,"
  "progress_bar=False,toy.input_noise=0.3,writers=(jsonl,tensorboard)"
)


def _crc32c_table():
  table = []
  for i in range(256):
    c = i
    for _ in range(8):
      c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    table.append(c)
  return table


_TABLE = _crc32c_table()


def _crc32c(data: bytes) -> int:
  c = 0xFFFFFFFF
  for b in data:
    c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
  return c ^ 0xFFFFFFFF


def _masked(data: bytes) -> int:
  c = _crc32c(data)
  return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _read_file(path):
  """The ``Event``s of one event file, CRCs checked."""
  with open(path, "rb") as f:
    data = f.read()
  pos, events = 0, []
  while pos < len(data):
    header = data[pos : pos + 8]
    (n,) = struct.unpack("<Q", header)
    (header_crc,) = struct.unpack("<I", data[pos + 8 : pos + 12])
    payload = data[pos + 12 : pos + 12 + n]
    (payload_crc,) = struct.unpack("<I", data[pos + 12 + n : pos + 16 + n])
    assert header_crc == _masked(header) and payload_crc == _masked(payload), path
    events.append(event_pb2.Event.FromString(payload))
    pos += 16 + n
  assert pos == len(data), f"{path}: {len(data) - pos} trailing bytes"
  return events


def _event_files(workdir):
  logdir = os.path.join(workdir, "tensorboard")
  return [os.path.join(logdir, n) for n in sorted(os.listdir(logdir)) if "tfevents" in n]


def _events(workdir):
  """All events of the run's files in TensorBoard's order (file names sorted)."""
  return [e for path in _event_files(workdir) for e in _read_file(path)]


def _is_start(e):
  return e.HasField("session_log") and e.session_log.status == event_pb2.SessionLog.START


def _curves_python_loader(events, purge=True):
  """tag -> [(step, value)] as TensorBoard's Python loader keeps them (file_version 2)."""
  curves = {}
  for e in events:
    if purge and _is_start(e):
      curves = {t: [(s, v) for s, v in pts if s < e.step] for t, pts in curves.items()}
    for v in e.summary.value:
      curves.setdefault(v.tag, []).append((e.step, v.simple_value))
  return curves


def _curves_data_server(events):
  """tag -> [(step, value)] as the data server's reservoirs keep them (preemption by step)."""
  curves = {}
  for e in events:
    for v in e.summary.value:
      pts = [(s, x) for s, x in curves.get(v.tag, []) if s < e.step]
      curves[v.tag] = pts + [(e.step, v.simple_value)]
  return curves


def _curves_jsonl(workdir):
  """tag -> [(step, value as float32)] from metrics.jsonl (event lines skipped)."""
  curves = {}
  for rec in metrics_lib.read_jsonl(os.path.join(workdir, "metrics.jsonl")):
    if "event" in rec:
      continue
    for k, v in rec.items():
      if k != "step":
        curves.setdefault(k, []).append((rec["step"], float(np.float32(v))))
  return curves


def test_crc32c_known_answer():
  assert _crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value (RFC 3720)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
  cfg = regression.get_config(BASE)
  work = str(tmp_path_factory.mktemp("tb") / "ref")
  trainer.train(toy.ToyRegression(cfg), cfg, work)
  return work


def test_tensorboard_scalars_equal_jsonl(uninterrupted):
  want = _curves_jsonl(uninterrupted)
  assert set(want) == {"train/loss", "train/grad_norm", "eval/mse", "eval/ols_param_error"}
  assert [s for s, _ in want["train/loss"]] == [5, 10, 15, 20, 25, 30]
  assert [s for s, _ in want["eval/mse"]] == [5, 10, 15, 20, 25, 30]
  files = _event_files(uninterrupted)
  assert len(files) == 1
  events = _events(uninterrupted)
  assert events[0].file_version == "brain.Event:2"
  assert _is_start(events[1]) and events[1].step == 1  # a fresh run purges nothing before it
  assert _curves_python_loader(events) == want
  assert _curves_data_server(events) == want


def test_resume_shows_the_uninterrupted_curves(uninterrupted, tmp_path):
  cfg = regression.get_config(BASE)
  work = str(tmp_path / "killed")
  with pytest.raises(Kill):  # dies after logging (and evaluating) step 15; checkpoint 10
    trainer.train(toy.ToyRegression(cfg), cfg, work, hooks=(kill_at(17),))
  resumed = trainer.train(toy.ToyRegression(cfg), cfg, work)
  assert resumed.resumed_from == 10
  files = _event_files(work)
  assert len(files) == 2
  second = _read_file(files[1])
  assert _is_start(second[1]) and second[1].step == 11
  events = _events(work)
  loss_steps = [e.step for e in events for v in e.summary.value if v.tag == "train/loss"]
  assert loss_steps.count(15) == 2  # the killed run's point past its checkpoint is on disk
  assert _curves_python_loader(events, purge=False) != _curves_jsonl(uninterrupted)
  want = _curves_jsonl(uninterrupted)
  assert _curves_jsonl(work) == want
  assert _curves_python_loader(events) == want
  assert _curves_data_server(events) == want


def test_writers_config_validation(tmp_path, monkeypatch):
  assert config_lib.trainer_defaults().writers == ("jsonl",)
  assert workdir_lib.is_runtime_key("writers")  # TensorBoard may be turned on at a resume
  # absl gives --config.writers=jsonl,tensorboard as one item; the config grammar as a tuple.
  assert metrics_lib.writer_names(("jsonl,tensorboard",)) == ("jsonl", "tensorboard")
  assert regression.get_config("writers=(jsonl,tensorboard)").writers == ("jsonl", "tensorboard")
  assert regression.get_config("writers=tensorboard").writers == ("tensorboard",)

  cfg = regression.get_config("smoke,writers=(jsonl,wandb)")
  work = tmp_path / "bad"
  with pytest.raises(config_lib.ConfigError) as info:
    trainer.train(toy.ToyRegression(cfg), cfg, str(work))
  msg = str(info.value)
  assert "'wandb'" in msg and "'jsonl'" in msg and "'tensorboard'" in msg
  assert not work.exists()  # stopped before touching the workdir

  # The default writes JSON lines only: no TensorBoard directory appears.
  writer = metrics_lib.MetricWriter(str(tmp_path / "default"), enabled=True, echo=False)
  writer.truncate_after(0)
  writer.write(1, {"train/loss": 1.0})
  writer.close()
  assert sorted(os.listdir(tmp_path / "default")) == ["metrics.jsonl"]

  monkeypatch.setitem(sys.modules, "tensorboardX", None)  # as if it were not installed
  with pytest.raises(config_lib.ConfigError, match=r"pip install tensorboardX==2\.6\.5"):
    metrics_lib.writer_names(("jsonl", "tensorboard"))


def test_restart_within_one_second_keeps_both_files(tmp_path, monkeypatch):
  # Event file names carry whole seconds; a resume in the same second as the crash must neither
  # overwrite the crashed run's file nor sort before it.
  import tensorboardX.event_file_writer as efw

  monkeypatch.setattr(efw.time, "time", lambda: 1_800_000_000.25)
  logdir = str(tmp_path / "tensorboard")
  first = metrics_lib.TensorBoardWriter(logdir, purge_step=1)
  first.write(5, {"x": 1.0})
  first.write(10, {"x": 2.0})  # past the checkpoint at 5: discarded by the resume
  first.close()
  second = metrics_lib.TensorBoardWriter(logdir, purge_step=6)
  second.write(10, {"x": 3.0})
  second.close()
  events = _events(str(tmp_path))
  assert len(_event_files(str(tmp_path))) == 2
  want = {"x": [(5, 1.0), (10, 3.0)]}
  assert _curves_python_loader(events) == want
  assert _curves_data_server(events) == want
