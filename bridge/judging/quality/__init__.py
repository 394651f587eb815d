"""Measuring a judge: the known-pair audit every label run makes (its lanes, records and verdict), judges measured
against people's labels (``bridge judge-eval``, the topic adapters' part of it), and what each costly judge was
measured to be worth."""
