"""Encoder infrastructure the retrievers use: where models come from, sentence embeddings and their cache,
the measured inference precision, and starting Lucene's JVM."""
