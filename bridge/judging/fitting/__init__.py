"""Fitting on labelled pairs, for every judge that calibrates: agreement and calibration metrics with their intervals
(``metrics.py``), isotonic / Platt score maps (``score_maps.py``), the hole-like calibration with strata chosen by
cross-validation (``hole_fit.py``) and measured as it is used (``hole_calibration.py``)."""
