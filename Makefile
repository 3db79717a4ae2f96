# Quick start: `make demo`, then `make test`. Both set up .venv when needed.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TORCH := $(VENV)/.torch
BACKENDS := backends/cpu backends/cuda backends/hip backends/musa backends/metal backends/opencl
TEST_ARGS ?= -n 2

.PHONY: setup demo test clean

setup: $(STAMP) $(TORCH)

$(STAMP): pyproject.toml conformance/pyproject.toml $(foreach b,$(BACKENDS),$(b)/pyproject.toml) scripts/setup.sh
	@PYTHON=$(PYTHON) bash scripts/setup.sh
	@touch $(STAMP)

# torch (CPU build): the tests check torch tensors through DLPack; the demo does not need it
$(TORCH): | $(STAMP)
	@bash scripts/setup.sh --torch
	@touch $(TORCH)

demo: $(STAMP)
	@echo "demo: compiling and running a GEMM, GEMM + ReLU, softmax and an elementwise add on the CPU (cached after the first run)"
	@$(PY) examples/tour.py

# Compilers for the device backends that build here without their hardware (HIP: clang + ROCm
# device libraries from Debian), and PoCL, the OpenCL platform on which the OpenCL backend runs
# for real on the CPU. Needs apt and root; without them those tests skip with the reason.
TOOLCHAINS := $(VENV)/.toolchains
$(TOOLCHAINS): scripts/install_hip_toolchain.sh scripts/install_opencl_runtime.sh | $(STAMP)
	bash scripts/install_hip_toolchain.sh
	bash scripts/install_opencl_runtime.sh
	touch $(TOOLCHAINS)

test: $(STAMP) $(TOOLCHAINS) $(TORCH)
	$(PY) -m pytest $(TEST_ARGS)

clean:
	rm -rf $(VENV)
