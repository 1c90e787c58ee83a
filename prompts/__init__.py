"""The prompts rag-eval sends, as editable files; installed as the package data of rag_eval.prompts."""
