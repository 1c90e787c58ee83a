"""The system where it runs: a deployed HTTP service, a LlamaIndex query engine or a Haystack
pipeline, called once per question; its passages give the retrieval figures, its answers are judged."""
