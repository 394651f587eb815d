"""``bridge eval check``: a leaderboard compared with a saved baseline, for CI."""
