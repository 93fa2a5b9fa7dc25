# gpurtl: `make` installs what is missing, builds, and generates every block's
# Verilog at default parameters under out/. `make test` runs the whole suite.

CARGO   ?= cargo
GPURTL  := target/release/gpurtl
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
SHELL   := /bin/bash

.PHONY: all deps build gen test lint bench clean

all: deps build gen

# Debian's Verilator 5.006 and yosys 0.23, installed only when missing.
deps:
	@if ! command -v verilator >/dev/null || ! command -v yosys >/dev/null; then \
	  echo "installing verilator and yosys from Debian's packages"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq verilator yosys g++ make; \
	fi
	@verilator --version && yosys -V

build:
	$(CARGO) build --release --workspace

gen: build
	$(GPURTL) gen --all -o out

# The whole suite: unit tests, cosimulation against the golden models, lint,
# synthesis checks, CLI error messages, regeneration stability.
# The last line sums every test binary's result line.
test: deps
	@mkdir -p target
	set -o pipefail; $(CARGO) test --release --workspace --no-fail-fast -- --test-threads=2 2>&1 \
	  | tee target/test.log; status=$$?; \
	  awk '/^test result:/ { p += $$4; f += $$6 } END { printf "summary: %d passed, %d failed\n", p, f }' target/test.log; \
	  exit $$status

BLOCKS := compress cbload

lint: build
	for b in $(BLOCKS); do $(GPURTL) lint $$b || exit 1; done

bench: build
	for b in $(BLOCKS); do $(GPURTL) bench $$b || exit 1; done

clean:
	rm -rf out target/gpurtl-cosim
