"""The judges ``bridge judge-eval`` measures, and its defaults (light: the command line's help names them).

A method is a registered judge (:data:`bridge.judging.JUDGES`) or one of judge-eval's own, ``OWN_METHODS``; a test
holds the lists to that, so that no name stands for a judge that does not exist.
"""

OWN_METHODS = {
    "lara": "LARA-style confidence escalation over the calibrated judge's scores (no judge of its own)",
    "adapter": "the topic adapters: within-topic cross-validation, their row on the same sample, learning curves",
    "answer-string": "relevant wherever the passage holds an answer string (the constant judge, on answer-bearing "
    "pairs only)",
}
"""judge-eval's methods that are not registered judges, and what each measures."""

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
