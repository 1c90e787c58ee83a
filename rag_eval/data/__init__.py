"""Loading and validating the corpus and the test set."""
