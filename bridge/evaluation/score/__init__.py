"""``bridge score``: runs that were never pooled, placed in a dataset's filled leaderboard."""
