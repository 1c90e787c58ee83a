"""The report: built once as data, rendered as JSON, Markdown and HTML."""
