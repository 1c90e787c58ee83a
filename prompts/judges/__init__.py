"""The judges' prompts (see rag_eval/judges/)."""
