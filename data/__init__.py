"""The data a user's audit reads by default, installed as the package ``rag_eval.bundled`` (see
pyproject.toml): the demo's questions (``python-docs/questions.jsonl``) and the default
judge-check cases (``judge-check/cases.jsonl``). Found from any folder through
``rag_eval.resources.shipped_data``."""
