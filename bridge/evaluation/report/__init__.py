"""reports/<ds>/: the CSV tables, the figures, report.md and a self-contained report.html.

The section builders return blocks (:mod:`.blocks`), :mod:`.build` puts them in the order of :mod:`.sections`, the
renderers (:mod:`.render_markdown`, :mod:`.render_html`) walk them, and :mod:`.writer` (``write_report``) writes the
folder. Imports go one way: blocks <- section builders <- build <- renderers and writer.
"""
