#!/usr/bin/env bash
# Prints the path of a Python >= 3.12 for the Makefile, or nothing (exit 1) when there is none.
# Order: python3.12 (the version the lock in requirements/ is resolved and tested on), python3.13,
# python3 when it is new enough, then every Python >= 3.12 that pyenv has installed (a pyenv
# shim on PATH may name a version that is not installed, so each candidate is run, not trusted).
ok() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; }
for cand in python3.12 python3.13 python3; do
  path=$(command -v "$cand" 2>/dev/null) || continue
  if ok "$path"; then
    # A pyenv shim resolves to the real interpreter so that the venv does not depend on the shim.
    "$path" -c 'import sys; print(sys.executable)'
    exit 0
  fi
done
root=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")
for path in $(ls -d "$root"/versions/3.1[2-9]*/bin/python3 2>/dev/null | sort -V); do
  if ok "$path"; then
    echo "$path"
    exit 0
  fi
done
exit 1
