"""Every run scored under every qrels set: inputs, tables, the estimate, the harness that gathers them."""
