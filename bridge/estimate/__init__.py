"""The estimate engine: one model of the holes (holes.py), the leaderboard's expected scores, intervals, bounds
and verdicts drawn from it (leaderboard.py), and the vectorized trec_eval measures they re-score with
(vectorized.py)."""
