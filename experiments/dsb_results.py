"""Writing a DSB ``run_table`` result to disk (the library computes it and writes nothing)."""

from __future__ import annotations

import json
import os


def write_results(result: dict, out_dir: str) -> None:
  """Writes a ``run_table`` result as ``table.md`` and ``results.json`` into ``out_dir`` (JSON has
  no NaN or infinity: non-finite numbers, such as the identity map's infinite KLs, are null)."""
  from experiments import dsb_table as runner

  os.makedirs(out_dir, exist_ok=True)
  with open(os.path.join(out_dir, "table.md"), "w") as f:
    f.write(result["table"] + "\n")
  keep = {k: result[k] for k in ("rows", "runs", "settings")}
  with open(os.path.join(out_dir, "results.json"), "w") as f:
    json.dump(runner.jsonable(keep), f, indent=2)
