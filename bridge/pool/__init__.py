"""The pool stage: the top k of every run, minus pairs already judged (pooling.py; ``bridge pool``: cli.py)."""
