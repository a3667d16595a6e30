# heaplab — build, demo, test, benchmark.
# `make demo` and `make test` are the two set-up commands; both work on a fresh clone.

CARGO   ?= cargo
HEAPLAB := target/release/heaplab
OUT     := out
# The Python venv (see the Python package section below).
VENV     := .venv
VPY      := $(VENV)/bin/python
VENV_ABS := $(abspath $(VENV))

.PHONY: all build demo test fuzz bench bench-quick bench-trace bench-report bench-apply-runtime bench-group-runtime bench-study bench-decide bench-access bench-apply bench-group bench-deps deps trace-deps study-deps report-deps clean \
        python python-test wheel bench-python bench-onnx bench-torch bench-dask

all: build

# Rust is the only toolchain needed so far; this fails with a clear hint if it is missing.
deps:
	@command -v $(CARGO) >/dev/null || { echo "cargo not found: install Rust (https://rustup.rs) first" >&2; exit 2; }

# The tracer is C (compiled by crates/trace/build.rs); its tests run real programs and compare
# with heaptrack, and check its stack walker against glibc's on interpreters (bc and node too).
# Installed with apt-get when missing (CI runs as root on Debian).
TRACE_TOOLS := cc sqlite3 jq xz gzip python3 heaptrack heaptrack_print bc node
TRACE_PKGS  := gcc libc6-dev sqlite3 jq xz-utils gzip python3 heaptrack libjemalloc2 libmimalloc2.0 bc nodejs
TRACE_LIBS  := /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/lib/x86_64-linux-gnu/libmimalloc.so.2
trace-deps:
	@missing=""; for t in $(TRACE_TOOLS); do command -v $$t >/dev/null || missing="$$missing $$t"; done; \
	[ -x /usr/bin/python3 ] || missing="$$missing /usr/bin/python3"; \
	for l in $(TRACE_LIBS); do [ -e $$l ] || missing="$$missing $$l"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing for the trace tests (missing:$$missing)"; \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(TRACE_PKGS) >/dev/null; \
	  else echo "run as root: apt-get install -y $(TRACE_PKGS)" >&2; exit 2; fi; \
	fi

# Replay and the peak-RSS study: the allocators selectable by name (glibc is always there) and
# the programs of `heaplab study --suite default`, and valgrind (the l1d metric of `heaplab
# compare`). Installed the same way as the trace deps.
STUDY_TOOLS := perl xz xmllint espeak-ng tjbench sqlite3 jq php ruby lua5.4 valgrind
STUDY_PKGS  := libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4 perl xz-utils libxml2-utils espeak-ng libjpeg-turbo-progs sqlite3 python3 jq php-cli ruby lua5.4 valgrind
STUDY_LIBS  := /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/lib/x86_64-linux-gnu/libmimalloc.so.2 /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
study-deps:
	@missing=""; for t in $(STUDY_TOOLS); do command -v $$t >/dev/null || missing="$$missing $$t"; done; \
	for l in $(STUDY_LIBS); do [ -e $$l ] || missing="$$missing $$l"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing for the replay and study tests (missing:$$missing)"; \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(STUDY_PKGS) >/dev/null; \
	  else echo "run as root: apt-get install -y $(STUDY_PKGS)" >&2; exit 2; fi; \
	fi

# The HTML report's test renders it in a real browser (headless Chromium): its script must run
# without an error in an actual engine. Installed the same way as the trace deps.
report-deps:
	@command -v chromium >/dev/null || { \
	  echo "installing for the report's browser test (missing: chromium)"; \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "run as root: apt-get install -y chromium" >&2; exit 2; fi; }

build: deps trace-deps study-deps
	$(CARGO) build --release --workspace

# The main job on a generated default: a neural-network-like instance of 2,000 buffers is
# planned, validated, summarised and drawn.
demo: build
	@mkdir -p $(OUT)
	$(HEAPLAB) gen --kind nn --buffers 2000 --seed 1 -o $(OUT)/demo.csv
	$(HEAPLAB) stats $(OUT)/demo.csv | head -n 10
	@echo
	$(HEAPLAB) plan $(OUT)/demo.csv -o $(OUT)/demo.placed.csv --plot $(OUT)/demo.png
	@echo
	$(HEAPLAB) check $(OUT)/demo.csv $(OUT)/demo.placed.csv
	@echo "picture: $(OUT)/demo.png"

# The venv comes first: some Rust tests compare with independent Python implementations in it
# (scipy, pymcdm, pyperf).
test: deps trace-deps study-deps report-deps $(VENV)/.requirements
	$(CARGO) test --workspace
	$(MAKE) python-test

# A longer run of the mutation fuzz test that `make test` runs briefly (crates/cli/tests/cli/fuzz.rs):
# FUZZ_CASES mutated files from FUZZ_SEED (a new seed each run unless given; it is printed, and
# failing inputs are kept under target/tmp/fuzz-failures/ to reproduce with that seed).
FUZZ_CASES ?= 50000
FUZZ_SEED  ?= $(shell date +%s)
fuzz: deps trace-deps study-deps
	HEAPLAB_FUZZ_CASES=$(FUZZ_CASES) HEAPLAB_FUZZ_SEED=$(FUZZ_SEED) $(CARGO) test -p heaplab-cli --test cli -- fuzz:: --nocapture

# Long measurements: the full table (shared set + generated 10^3 … 10^6 buffers, and 10^7 for
# random, nn and malloc: the streaming and memory check; a 10^7 run may take minutes).
bench: build bench-trace
	$(CARGO) build --release -p heaplab-bench
	target/release/heaplab-bench --heaplab $(HEAPLAB) --max-n 10000000 --kill-after 1800

bench-quick: build
	$(CARGO) build --release -p heaplab-bench
	target/release/heaplab-bench --heaplab $(HEAPLAB) --quick --out $(OUT)/bench-quick

# Tracer speed and size against heaptrack on real programs, without call stacks and at stack
# depths 1, 8, 16 and 64 (gcc's cc1, bc, node and ruby among them): writes
# bench/trace-results.md/json.
bench-trace: build
	$(CARGO) build --release -p heaplab-bench
	target/release/heaplab-bench-trace --heaplab $(HEAPLAB)

# heaplab report's time on a trace of 10^7 heap calls at --stack-depth 16: writes
# bench/report-results.md.
bench-report: build
	$(CARGO) build --release -p heaplab-bench
	target/release/heaplab-bench-report --heaplab $(HEAPLAB)

# The layout runtime's cost per allocation over the fallback allocator (heaplab run):
# writes bench/apply-runtime-results.md.
bench-apply-runtime:
	$(CARGO) build --release -p heaplab-bench
	target/release/heaplab-bench-apply-runtime

# The grouped allocator's cost per allocation (identification: a stack walk and the selectors)
# over jemalloc alone: writes bench/group-runtime-results.md.
bench-group-runtime:
	$(CARGO) build --release -p heaplab-bench
	target/release/heaplab-bench-group-runtime

# Replay and fragmentation speed, placed-file size, and the default suite's study (10 runs per
# allocator): writes bench/study-results.md/json and bench/study-suite/ (the report).
bench-study: build
	$(CARGO) build --release -p heaplab-bench
	target/release/heaplab-bench-study --heaplab $(HEAPLAB)

# The access profiler's slowdown on the shared workloads (built into target/workloads) against
# the plain program, valgrind --tool=none and --tool=dhat: writes bench/access-results.md/json.
bench-access: build
	$(CARGO) build --release -p heaplab-bench
	target/release/heaplab-bench-access --heaplab $(HEAPLAB)

# The thesis' CPython allocator study (pyperformance x pymalloc on/off x glibc/jemalloc/mimalloc,
# for /usr/bin/python3, a PGO+LTO release build, and a standard build: HEAPLAB_STANDARD_PYTHON or
# pyenv's 3.11.7) and the default suite x four allocators, analysed with HPT: writes
# bench/decide-results.md/json and the reports in bench/decide/. pyperformance creates its
# per-Python venvs (benchmark dependencies from PyPI) under target/pyperformance. About 40 min.
BENCH_VENV := .venv-bench
DECIDE_ARGS ?=
bench-deps: $(BENCH_VENV)/.installed
$(BENCH_VENV)/.installed:
	@command -v python3 >/dev/null || { echo "python3 not found: install Python >= 3.9 first" >&2; exit 2; }
	@[ -x $(BENCH_VENV)/bin/python ] || python3 -m venv $(BENCH_VENV) || { echo "python3 -m venv failed: on Debian, apt-get install python3-venv" >&2; exit 2; }
	$(BENCH_VENV)/bin/python -m pip install -q pyperformance pyperf
	@touch $@

bench-decide: build bench-deps
	$(CARGO) build --release -p heaplab-bench
	target/release/heaplab-bench-decide --heaplab $(HEAPLAB) $(DECIDE_ARGS)

# Layouts applied to running programs (heaplab access, layout, run) against glibc, jemalloc,
# mimalloc and tcmalloc: the shared pointer-chasing workloads (built into target/bench-apply) and
# sqlite3, jq, xmllint, python3 on generated inputs; wall time, peak RSS, cachegrind D1/LL misses,
# match rate. Writes bench/apply-results.md and bench/apply/*.json. About 30 min on 2 cores;
# HEAPLAB_BENCH_APPLY_QUICK=1 is a few minutes (three workloads, 4 runs, into out/).
APPLY_ARGS ?=
bench-apply: build
	$(CARGO) build --release -p heaplab-bench
	nice target/release/heaplab-bench-apply --heaplab $(HEAPLAB) $(APPLY_ARGS)

# HALO-style grouping against glibc, jemalloc, mimalloc and tcmalloc on the same programs as
# bench-apply: profiled on small inputs (`heaplab access --contexts`, `heaplab group`), measured on
# large ones (`heaplab run --groups`, fallback jemalloc): wall time, peak RSS, cachegrind D1/LL
# misses, fragmentation of the grouped heap. Writes bench/group-results.md/json and
# bench/group/against-jemalloc.svg. HEAPLAB_BENCH_GROUP_QUICK=1: three workloads, 4 runs, into out/.
GROUP_ARGS ?=
bench-group: build
	$(CARGO) build --release -p heaplab-bench
	nice target/release/heaplab-bench-group --heaplab $(HEAPLAB) $(GROUP_ARGS)

# ---- Python package (python/, crates/py): a venv at .venv made with `python3 -m venv`, the test
# requirements (python/requirements-test.txt, one package a line) installed into it, and the
# extension built once, in release, straight into it (`maturin develop`). The pytest suite runs
# the CLI built by `cargo test` (target/debug/heaplab) or a release one when there is one.

$(VENV)/.requirements: python/requirements-test.txt
	@command -v python3 >/dev/null || { echo "python3 not found: install Python >= 3.9 first" >&2; exit 2; }
	@[ -x $(VPY) ] || python3 -m venv $(VENV) || { echo "python3 -m venv failed: on Debian, apt-get install python3-venv" >&2; exit 2; }
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -r python/requirements-test.txt
	@touch $@

# The extension into the venv (rebuilt by cargo only where sources changed).
python: deps $(VENV)/.requirements
	cd python && VIRTUAL_ENV=$(VENV_ABS) $(VENV_ABS)/bin/maturin develop --release --quiet

python-test: python
	$(VPY) -m pytest -q python/tests

# An abi3 wheel (CPython >= 3.9) in target/wheels.
wheel: deps $(VENV)/.requirements
	cd python && $(VENV_ABS)/bin/maturin build --release --out ../target/wheels

# heaplab.dask.plan_many on an embedded LocalCluster: 200 instances of 10^4 buffers made by
# `heaplab gen`, 1 vs 2 worker processes: writes bench/dask-results.md/json.
bench-dask: build python
	$(VPY) python/bench/dask_plan_many.py --heaplab $(HEAPLAB)

# The package's overhead on 10^6 buffers against the CLI's planning time: writes
# bench/python-results.md/json.
bench-python: build python
	$(VPY) python/bench/plan_overhead.py --heaplab $(HEAPLAB)

# Activation memory of the nine model graphs the onnx wheel ships, at batch 1 and 32: the naive
# total, the greedy planners of TFLite and ONNX Runtime, heaplab and the lower bound; writes
# bench/onnx-results.md/json.
bench-onnx: python
	$(VPY) python/bench/onnx_models.py

# GPU memory: PyTorch's caching allocator (peak allocated and reserved, from recorded training
# steps under python/tests/data/torch/) beside heaplab's plan; writes bench/torch-results.md/json.
bench-torch: python
	$(VPY) python/bench/torch_snapshots.py

clean:
	$(CARGO) clean
	rm -rf $(OUT) $(VENV)
