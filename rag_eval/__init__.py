"""rag-eval: audit a retrieval-augmented generation system, stage by stage."""

import os

# Ragas phones home unless told not to; rag-eval never lets it. Models and data sets are
# never fetched from a hub at run time.
os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

__version__ = "0.1.0"


def load_config(path):
    """Read and validate an audit config (see rag_eval.config.load_config)."""
    from rag_eval.config import load_config as _load

    return _load(path)


def audit(cfg, **kwargs):
    """Run the whole audit of a config; returns the run folder (see rag_eval.runner.run_audit)."""
    from rag_eval.runner import run_audit

    return run_audit(cfg, **kwargs)


def compare(cfg, **kwargs):
    """Compare the config's prompts on the same contexts; returns the run folder."""
    from rag_eval.runner import run_compare

    return run_compare(cfg, **kwargs)
