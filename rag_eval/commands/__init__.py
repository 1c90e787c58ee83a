"""The commands of ``rag-eval``, one module each: ``add_parser(sub)`` declares the command and its
options, ``run(args) -> int`` calls the Python API (``rag_eval.api``) once and prints what it
returned. ``rag_eval.cli`` assembles them in the order of ``COMMANDS``."""
