#!/usr/bin/env bash
# The study's answers: `rag-eval run` on each corpus's config (the citing prompt on hybrid's top 3),
# one corpus at a time, into RUNS (default /work/citation-runs). Run from the repository root.
set -u
RUNS=${RUNS:-/work/citation-runs}
for corpus in ${CORPORA:-attrs structlog python dotenv tinytag tenacity tabulate parse xmltodict}; do
  start=$(date +%s)
  .venv/bin/rag-eval run benchmarks/citations/data/$corpus.yaml --out "$RUNS" || echo "FAILED: $corpus"
  echo "done: $corpus in $(( $(date +%s) - start )) s"
done
