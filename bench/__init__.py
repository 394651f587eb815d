"""Benchmarks (``make bench``): each ``bench_<name>.py`` measures a ratio against a baseline run in the same process."""
