"""Retrievers: each ranks the corpus for every question of the test set."""
