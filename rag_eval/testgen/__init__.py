"""Test sets generated from the corpus (``rag-eval generate``)."""
