"""The test-set generator's prompts (see rag_eval/testgen/generator.py)."""
