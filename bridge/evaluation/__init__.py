"""Re-benchmarking on original vs augmented qrels: measures, holes, leaderboards."""
