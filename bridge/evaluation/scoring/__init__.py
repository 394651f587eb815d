"""Runs scored against qrels: measures, rank correlation, significance, bias-reduction curves."""
