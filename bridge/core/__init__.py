"""What every stage shares: errors, TREC files, atomic I/O, label records, the measure vocabulary, kinds of
holes, the workspace layout, up-to-date stamps, the plug-in registry, where work runs, and figure files."""
