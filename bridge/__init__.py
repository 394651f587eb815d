"""bridge: complete missing relevance judgments with DREAM debates and re-benchmark retrievers."""

__version__ = "0.1.0"
