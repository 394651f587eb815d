"""Human review of escalated DREAM cases: a small web app (and CSV round trip) backed by SQLite.

Escalated pairs of ``labels.jsonl`` become review cases shown with their debate history; a share
of known-answer attention checks built from the dataset's gold pairs is mixed in. Each case
collects N judgments from distinct annotators; the majority becomes a ``human`` label record.

Modules: ``config`` (settings), ``items`` (cases and checks from the pipeline's files),
``store`` (the SQLite database: annotators, assignment, judgments), ``aggregate`` (votes,
Fleiss' kappa, attention pass rates), ``render`` (debate history and evidence highlighting),
``app`` (the Flask pages), ``csvio`` (export/import), ``merge`` (back into labels.jsonl),
``workflow`` (each ``bridge review`` action as a library function; ``cli`` and ``options_cli`` parse and call them).
"""
