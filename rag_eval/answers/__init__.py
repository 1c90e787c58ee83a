"""The answers stage: answers generated from prompts on the retrieved contexts."""
