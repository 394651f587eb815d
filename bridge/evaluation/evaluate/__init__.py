"""``bridge eval``: re-benchmark every run on original vs augmented qrels -> reports/<ds>/."""
