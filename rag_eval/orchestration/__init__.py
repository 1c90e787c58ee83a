"""Runs of the whole audit and what is built on finished runs: the runner, prompt comparison,
supplied answers, run-vs-run diffs, history and gates."""
