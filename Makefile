# heaplab — build, demo, test, benchmark.
# `make demo` and `make test` are the two set-up commands; both work on a fresh clone.

CARGO   ?= cargo
HEAPLAB := target/release/heaplab
OUT     := out

.PHONY: all build demo test bench bench-quick deps clean

all: build

# Rust is the only toolchain needed so far; this fails with a clear hint if it is missing.
deps:
	@command -v $(CARGO) >/dev/null || { echo "cargo not found: install Rust (https://rustup.rs) first" >&2; exit 2; }

build: deps
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

test: deps
	$(CARGO) test --workspace

# Long measurements: the full table (shared set + generated 10^3 … 10^6 buffers).
bench: build
	$(CARGO) build --release -p heaplab-bench
	target/release/heaplab-bench --heaplab $(HEAPLAB)

bench-quick: build
	$(CARGO) build --release -p heaplab-bench
	target/release/heaplab-bench --heaplab $(HEAPLAB) --quick --out $(OUT)/bench-quick

clean:
	$(CARGO) clean
	rm -rf $(OUT)
