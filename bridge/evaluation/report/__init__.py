"""reports/<ds>/: the CSV tables, the figures, report.md and a self-contained report.html."""
