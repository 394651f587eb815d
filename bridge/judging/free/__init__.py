"""Judges and rules that call no model: answer-string evidence, qrels/constant/random judges, answer swaps."""
