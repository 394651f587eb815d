"""Does bridge repair a leaderboard? The leave-one-system-out test (``bridge reusability``) and the
sparse-judgment benchmark (``sparse_cuts.py``, its tables ``sparse_tables.py``; run by ``python -m bench sparse``)."""
