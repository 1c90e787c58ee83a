"""Every model call of rag-eval goes through this package: one client layer, one cache, one count."""
