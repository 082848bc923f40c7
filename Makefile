# Two entry points for a fresh machine (stock Rust + Python 3.11 only):
#   make run   — set up, build, run the default scenario, write summary + plots to results/default
#   make test  — set up, build, run every test (Rust in release mode, then Python)
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
CARGO_TEST := cargo test --release --workspace --exclude cclab-py --exclude cclab-net
# Real-datapath tests measure timing on a 2-core machine: run them one at a time.
NET_TEST := cargo test --release -p cclab-net -- --test-threads=1

.PHONY: run test setup build rust-test py-test bench lint clean fuzz-scenarios

$(VENV)/.deps: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q "maturin>=1.5,<2" "pydantic>=2.5" "click>=8.1" "numpy>=1.24" "pandas>=2.0" \
		"pyarrow>=14" "matplotlib>=3.7" "rich>=13" "pytest>=7" "hypothesis>=6.90" \
		"dask[distributed]>=2024.1" "ruff>=0.17,<0.18" "mypy>=2.4,<3"
	touch $@

setup: $(VENV)/.deps

# The real datapath's binary (`cclab net run` calls it) goes into the venv's bin, where cclab.net finds it.
# CARGO_TARGET_DIR is honoured (default target/).
NET_BIN := $(or $(CARGO_TARGET_DIR),target)/release/cclab-net

build: setup
	VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(VENV))/bin:$$PATH maturin develop --profile dist -q
	cargo build --release -q -p cclab-net
	install -m 755 $(NET_BIN) $(VENV)/bin/cclab-net

run: build
	$(VENV)/bin/cclab run scenarios/default.toml --out results/default

rust-test:
	$(CARGO_TEST)
	$(NET_TEST)

py-test: build
	$(VENV)/bin/pytest -q -rs -x tests

test: setup
	$(CARGO_TEST)
	$(NET_TEST)
	$(MAKE) py-test

bench: build
	$(PY) bench/run.py

# The long fuzzing campaign of the scenario error contract (tests/fuzz/campaign.py; the fast one is
# tests/test_fuzz_contract.py). Its last result is recorded in docs/scenario.md, "Fuzzing".
FUZZ_SEED ?= 1
fuzz-scenarios: build
	$(PY) tests/fuzz/campaign.py --cases 200000 --runs 2000 --files 5000 --seed $(FUZZ_SEED)

# Rust: rustfmt and clippy; Python: ruff and mypy (their settings are in pyproject.toml).
lint: setup
	cargo fmt --all --check
	cargo clippy --workspace --release -- -D warnings
	$(VENV)/bin/ruff check python tests bench validation
	$(VENV)/bin/mypy

clean:
	cargo clean
	rm -rf $(VENV) results
