"""Judges and rules that call no model: answer-string evidence, the qrels, constant, open, random and answer-string
judges, known pairs and answer swaps for the audit and calibrations, and the answer judge (answer-lexical without a
model; the LLM judges hand it their signals)."""
