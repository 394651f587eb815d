"""The judges ``bridge judge-eval`` measures, and its defaults (light: the command line's help names them)."""

EVAL_METHODS = (
    "llmjudge",
    "calibrated",
    "lara",
    "dream",
    "cascade",
    "umbrela",
    "adapter",
    "answer-string",
    "answer-lexical",
    "answer-context",
    "answer-reader",
)
DEFAULT_EVAL_METHODS = "llmjudge,calibrated,lara,dream,cascade"
REFERENCE_METHODS = (
    "answer-string",
    "answer-lexical",
    "answer-context",
    "answer-reader",
    "calibrated",
    "cascade",
    "dream",
    "llmjudge",
    "umbrela",
)
DEFAULT_REFERENCE_METHODS = "answer-string,answer-lexical,calibrated,cascade,dream,answer-context"
"""With --reference: the answer string alone, the learned answer-context judge without and with the LLM, and
the LLM judges."""
