"""Measuring a judge: the audit, agreement and calibration metrics with their intervals, the read reference."""
