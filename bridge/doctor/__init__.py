"""``bridge doctor``: what is installed and usable (checks.py; the command: cli.py)."""
