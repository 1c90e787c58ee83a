"""The rag-eval version: a leaf module, so that any module can read it without importing the package top."""

# pyproject.toml reads the project's version from here (tool.setuptools.dynamic).
__version__ = "0.1.0"
