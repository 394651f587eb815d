"""Judges and maps fitted on labelled pairs: topic adapters, calibration, the answer judges and the hole-like
calibration they are fitted with."""
