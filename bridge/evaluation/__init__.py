"""The eval stage and the commands around it: runs re-benchmarked on original vs augmented qrels.

A room per concern, each importing only the rooms above it in this list (``tests/test_architecture.py`` checks it):

* ``scoring/``      run against qrels: who computes each measure (``providers.py``: ir_measures where it knows the
  measure, else the registered measure's object), trec_eval's measures through ir_measures, the BRIDGE-compatible
  variants and Hole@k (``trec_measures.py``, ``bridge_compat.py``), rank correlation, paired significance,
  growth-rate and marginal-contribution curves;
* ``rebenchmark/``  every run under every qrels set: what is evaluated (``inputs.py``), the tables (``run_scores.py``),
  the augmented leaderboard as an estimate (``estimated.py``), the harness that gathers them, the qrels draws, the
  printed summary;
* ``reusability/``  does bridge repair a leaderboard? the leave-one-system-out test and the sparse-judgment benchmark;
* ``report/``       reports/<ds>/: the CSV tables, figures, report.md and report.html;
* ``score/``, ``rag/``, ``check/``  the commands ``bridge score``, ``bridge rag`` and ``bridge eval check``;
* ``evaluate/``     the command ``bridge eval``.
"""
