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

.PHONY: sysdeps testdeps browser run test setup build rust-test py-test validate bench lint stubtest clean fuzz fuzz-scenarios reproduce

# Re-run when the pip line below changes too (the Makefile), so an existing .venv gets a new package.
$(VENV)/.deps: pyproject.toml Makefile
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q "maturin>=1.5,<2" "pydantic>=2.7" "click>=8.1" "numpy>=1.24" "pandas>=2.0" \
		"pyarrow>=14" "matplotlib>=3.7" "rich>=13" "pytest>=7" "pytest-xdist>=3.5,<4" "hypothesis>=6.90" \
		"dask[distributed]>=2024.1" "ruff>=0.17,<0.18" "mypy>=2.4,<3" "gymnasium>=1.0,<2" "jsonschema>=4.18" \
		"markdown>=3.5" "playwright>=1.40,<2" "cma>=4.0,<5" "pettingzoo>=1.24,<2"
	touch $@

# The report test drives a real headless browser: Debian's chromium (playwright drives it; no browser
# download). Installed when missing and we are root (CI is); otherwise that test skips and says why.
browser:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
		|| echo "note: chromium not installed (not root or no apt-get): the HTML report test will skip"; }

# The kernel datapath (crates/cclab-bpf) compiles a BPF program with clang and builds libbpf from
# source (libbpf-sys), which needs libelf and zlib headers. Installed from Debian when missing and we
# are root (CI is); otherwise the build stops here saying what to install.
SYSDEPS := clang libelf-dev zlib1g-dev pkg-config
sysdeps:
	@command -v clang >/dev/null && pkg-config --exists libelf zlib 2>/dev/null || { \
		[ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(SYSDEPS) >/dev/null); } || \
		{ echo "error: the kernel datapath needs $(SYSDEPS) (Debian names); install them as root"; exit 1; }

setup: $(VENV)/.deps sysdeps

# The real datapath's binary (`cclab net run` calls it) goes into the venv's bin, where cclab.net finds it.
# CARGO_TARGET_DIR is honoured (default target/).
NET_BIN := $(or $(CARGO_TARGET_DIR),target)/release/cclab-net
BPF_BIN := $(or $(CARGO_TARGET_DIR),target)/release/cclab-bpf

# compileall: an editable install (maturin develop) leaves python/cclab uncompiled, and where
# PYTHONDONTWRITEBYTECODE is set (this machine's sandbox, some CI images) every `cclab` process then compiled
# modules from source (17 for `cclab run --no-plots`, 0.12 s of its start on this machine, docs/performance.md);
# pip compiles a wheel it installs the same way.
# The Python module is built with profile-guided optimisation (tools/pgo.py: an instrumented build, a
# minute of training runs, the final build; ≈ 15 % off the simulation loop, the same results bit for bit,
# docs/performance.md). CCLAB_PGO=0 builds it once, without a profile; so does a toolchain without rustup's
# llvm-tools component, saying so.
build: setup
	$(PY) tools/pgo.py build --venv $(VENV)
	$(PY) -m compileall -q python/cclab
	cargo build --release -q -p cclab-net -p cclab-bpf
	install -m 755 $(NET_BIN) $(VENV)/bin/cclab-net
	install -m 755 $(BPF_BIN) $(VENV)/bin/cclab-bpf

run: build
	$(VENV)/bin/cclab run scenarios/default.toml --out results/default

rust-test:
	$(CARGO_TEST)
	$(NET_TEST)

# iperf3: the kernel datapath's test runs it as "any program" selecting our algorithm by name.
testdeps:
	@command -v iperf3 >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iperf3 >/dev/null) \
		|| echo "note: iperf3 not installed (not root or no apt-get): its kernel-datapath test will skip"; }

# Two passes: every test that does not time real things on PYTEST_WORKERS pytest workers (one test file
# per worker at a time), then those that do (marker `realtime`, tests/conftest.py) alone, so that no
# simulation test disturbs a real run's timing.
PYTEST_WORKERS ?= 2
PYTEST := $(VENV)/bin/pytest -q -rsx -x --durations=25
py-test: build browser testdeps
	$(PYTEST) -n $(PYTEST_WORKERS) --dist loadfile -m "not validate and not realtime" tests
	$(PYTEST) -m "realtime and not validate" tests

# Statistical agreement checks that need many real runs (pytest marker `validate`, pyproject.toml): the
# medians of several real runs of both sides (tests/test_net.py), ~2-3 min as root on an idle machine.
# `make test` runs a cheaper version of each that still asserts the property. CI runs this target too
# (.ci/run, after `make test`), as it adds ~3 min to a ~12 min suite (docs/real-datapath.md, "Tests").
validate: build testdeps
	$(VENV)/bin/pytest -q -rsx -m validate tests

# Every paper's experiments at full size, in one run at one commit (~32 min on 2 cores, 2026-11-29; -j and
# --scheduler as `cclab reproduce`): the HTML report and docs/reproduce.md's results section are
# regenerated from that run, so the page states one commit. REPRODUCE_OUT keeps the runs (resumable).
REPRODUCE_OUT ?= results/reproduce
reproduce: build
	$(VENV)/bin/cclab reproduce all --out $(REPRODUCE_OUT)
	$(VENV)/bin/cclab report $(REPRODUCE_OUT) --markdown docs/reproduce.md

# The compiled module against its stub python/cclab/_native.pyi (names, signatures, types): needs the build.
stubtest: build
	$(PY) -m mypy.stubtest cclab._native

test: setup
	$(CARGO_TEST)
	$(NET_TEST)
	$(MAKE) py-test
	$(MAKE) lint

bench: build
	$(PY) bench/run.py
	$(PY) bench/whole_process.py
	$(PY) bench/short_flows.py
	$(PY) bench/emulator_rate.py

# Coverage-guided fuzzing of the transport's state machines under hostile segments (fuzz/, its own
# workspace; docs/real-datapath.md, "What a hostile packet can and cannot do"). One core, FUZZ_SECONDS
# of libFuzzer; the working corpus grows in fuzz/corpus (not committed), seeded from fuzz/seeds; a
# failing input lands in fuzz/artifacts. cargo-fuzz is installed from crates.io if missing; the stable
# toolchain builds it (RUSTC_BOOTSTRAP=1, no sanitizer: the code under test is safe Rust, and the
# build keeps debug assertions, so an arithmetic overflow is a crash).
FUZZ_SECONDS ?= 600
FUZZ_TARGET ?= transport_hostile
fuzz:
	command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
	mkdir -p fuzz/corpus/$(FUZZ_TARGET)
	cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run --sanitizer none --debug-assertions $(FUZZ_TARGET) \
		corpus/$(FUZZ_TARGET) seeds/$(FUZZ_TARGET) -- \
		-max_total_time=$(FUZZ_SECONDS) -max_len=4096 -print_final_stats=1

# The long fuzzing campaign of the scenario error contract (tests/fuzz/campaign.py; the fast one is
# tests/test_fuzz_contract.py). Its last result is recorded in docs/scenario.md, "Fuzzing".
FUZZ_SEED ?= 1
fuzz-scenarios: build
	$(PY) tests/fuzz/campaign.py --cases 200000 --runs 2000 --files 5000 --seed $(FUZZ_SEED)

# Rust: rustfmt and clippy; Python: ruff and mypy (their settings are in pyproject.toml), and the
# compiled module's stub checked against it (mypy.stubtest).
lint: setup
	cargo fmt --all --check
	cargo clippy --workspace --release --all-targets -- -D warnings
	$(VENV)/bin/ruff check python tests bench validation examples tools
	$(VENV)/bin/mypy
	$(MAKE) stubtest

clean:
	cargo clean
	rm -rf $(VENV) results
