# gpurtl: `make` installs what is missing, builds, and generates every block's
# Verilog at default parameters under out/. `make test` runs the whole suite.

CARGO   ?= cargo
GPURTL  := target/release/gpurtl
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

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
test: deps
	$(CARGO) test --release --workspace --no-fail-fast -- --test-threads=2

lint: build
	$(GPURTL) lint compress

bench: build
	$(GPURTL) bench compress

clean:
	rm -rf out target/gpurtl-cosim
