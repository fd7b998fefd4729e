#!/usr/bin/env bash
# Set-up and device check on an accelerator host that has its own Python stack and no package
# registry (e.g. an H200 host with Python 3.12, jax/jaxlib 0.11.2 + the CUDA 13 plugin, flax,
# optax, chex, orbax-checkpoint, diffrax, tensorstore, matplotlib, scikit-learn, tqdm, absl-py,
# but no ml-collections, ott-jax or distrax).
#
#   bash tools/device_setup.sh --download     # on a CPU machine with PyPI: the missing wheels -> .whl/
#   bash tools/device_setup.sh [FLAGS...]     # on the device host, from the repository root
#
# On the device host it (1) installs the carried wheels of .whl/ and the project itself with
# --no-deps --no-index into $SITE (default /tmp/iclr26_site; nothing of the host's own packages is
# replaced), (2) imports every room and the kernels and prints the versions and devices, (3) runs
# `python -m benchmarks.device_check --methods FLAGS...`, writing the table to
# $OUT/device_check.md when OUT is set (else ./device_check.md) and the workers' stderr beside it.
# PYTHON picks the interpreter (default python3). A CPU rehearsal of the same steps:
#   PYTHON=/path/to/python3.12 SITE=/tmp/site312 bash tools/device_setup.sh --tiny
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
SITE=${SITE:-/tmp/iclr26_site}
WHL=.whl
# The project's requirements that such a host lacks, with their own missing requirements, pinned to
# the versions the project is tested with (requirements/lock.txt; distrax needs tfp-nightly, which
# needs dm-tree, gast, decorator; ott-jax needs jaxopt). One version of each. The host's own jax,
# jaxlib and CUDA 13 plugin are used as they are (jax >= 0.11.2 is allowed).
WHEELS=(
  distrax==0.1.9
  tfp-nightly==0.26.0.dev20261027
  dm-tree==0.1.10
  gast==0.7.0
  decorator==5.3.2
  ml_collections==1.1.0
  ott-jax==0.6.0
  jaxopt==0.8.5
)

if [[ "${1:-}" == "--download" ]]; then
  shift
  mkdir -p "$WHL"
  plats=()
  for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 \
    manylinux2014_x86_64 manylinux1_x86_64 any; do
    plats+=(--platform "$p")
  done
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version "${PYVER:-3.12}" \
    --implementation cp "${plats[@]}" -d "$WHL" "${WHEELS[@]}"
  ls -l "$WHL"
  du -sh "$WHL"
  exit 0
fi

shopt -s nullglob
wheels=("$WHL"/*.whl)
if ((${#wheels[@]} == 0)); then
  echo "device_setup: no wheels in $WHL/ (run 'bash tools/device_setup.sh --download' on a machine with PyPI first)" >&2
  exit 2
fi
echo "== installing ${#wheels[@]} carried wheels and the project (--no-deps) into $SITE"
"$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
  "${wheels[@]}"
# The project itself (iclr26_jax, kernels_pallas; experiments/ and benchmarks/ run from this
# directory). Building
# needs the host's setuptools (no build isolation: nothing can be fetched).
"$PY" -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --no-cache-dir \
  --upgrade --target "$SITE" .
rm -rf build
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"

echo "== imports"
"$PY" - <<'EOF'
import importlib
import sys
from importlib import metadata

mods = [
  "jax", "jaxlib", "flax", "optax", "chex", "orbax.checkpoint", "diffrax", "ml_collections",
  "distrax", "ott", "jaxopt", "tensorstore", "sklearn", "matplotlib", "tqdm", "absl",
  "kernels_pallas.bitplane_matmul.ops", "kernels_pallas.spline_lookup.ops", "iclr26_jax.core.trainer",
  "experiments.toy", "iclr26_jax.qam.method",
  "iclr26_jax.minpv", "iclr26_jax.pdns.method", "iclr26_jax.dsb.method", "iclr26_jax.dsb.metrics",
  "iclr26_jax.pdns.metrics", "iclr26_jax.lmkan.method", "iclr26_jax.anybcq.method",
  "experiments.registry", "benchmarks.accelerator_plan", "benchmarks.device_check",
]
bad = []
for m in mods:
  try:
    importlib.import_module(m)
  except Exception as e:  # noqa: BLE001
    bad.append(f"{m}: {type(e).__name__}: {e}")
dists = ["jax", "jaxlib", "jax-cuda13-plugin", "jax-cuda13-pjrt", "libtpu", "flax", "optax",
         "chex", "orbax-checkpoint", "diffrax", "numpy", "distrax", "tfp-nightly", "ml_collections",
         "ott-jax", "iclr26_jax"]
vers = []
for d in dists:
  try:
    vers.append(f"{d} {metadata.version(d)}")
  except metadata.PackageNotFoundError:
    pass
print(f"python {sys.version.split()[0]}; " + ", ".join(vers))
import jax

print("devices:", jax.devices())
if bad:
  print("FAILED imports:\n  " + "\n  ".join(bad))
  sys.exit(1)
print(f"all {len(mods)} imports ok")
EOF

echo "== device check"
exec "$PY" -m benchmarks.device_check --methods "$@"
