"""The judge chain of a label run, shared by ``bridge label``, ``score`` and ``reusability``: its options
(:func:`add_label_options`) and the :class:`~bridge.label.chain.ChainSpec` they describe (:func:`spec_from_args`)."""

from __future__ import annotations

import argparse

from bridge.core.shared_options_cli import show_progress
from bridge.judging import plain_judge
from bridge.judging.quality.audit import AuditConfig
from bridge.label.chain import ChainSpec, answer_fallback, fallback_judges, refine_judges
from bridge.label.judge_options_cli import add_judge_options, judge_spec_from_args
from bridge.label.topic_stage_options_cli import add_adapter_options, add_exemplar_options, topic_stages_from_args
from bridge.llm.options_cli import add_llm_options, llm_config_from_args


def add_label_options(p: argparse.ArgumentParser) -> None:
    """Judge, evidence and audit options shared by ``label`` and ``reusability``."""
    add_llm_options(p)
    add_judge_options(p)
    _add_judge_choice(p)
    add_adapter_options(p)
    _add_evidence_and_audit_options(p)
    add_exemplar_options(p)
    _add_budget_options(p)


def _add_judge_choice(p: argparse.ArgumentParser) -> None:
    """``--judge`` and ``--fallback-judge``: which judge decides which pairs."""
    p.add_argument(
        "--judge",
        choices=("auto", "adapter", *fallback_judges()),
        default="auto",
        help="auto (default): topic adapters where topics have enough human judgments, --fallback-judge for "
        "the rest; adapter: the same even if no topic qualifies; or one judge for every pair: cascade, dream, "
        "a single-call baseline (llmjudge, umbrela), or a reference judge that calls no model: qrels (answers "
        "from --judge-qrels), constant (--constant-label for every pair), random (relevant with the topic's "
        "share of relevant judgments, --random-seed) or open (no judge: the free stages alone; every other pair "
        "keeps the estimate's prior P, as with --max-minutes 0)",
    )
    p.add_argument(
        "--fallback-judge",
        choices=fallback_judges(),
        default=None,
        help="the judge for the pairs no earlier stage decides (default: cascade: calibrated one-pass score, "
        "DREAM debate for the uncertain band, people for debate disagreements; with --reference, where the "
        "answer-context judge decides the answer-bearing pairs: llmjudge, one call for the few pairs without an "
        "answer match that reach it, the gate audit's)",
    )


def _add_evidence_and_audit_options(p: argparse.ArgumentParser) -> None:
    """The prefilter, the answer-string evidence and the known-pair audit."""
    p.add_argument(
        "--prefilter",
        default=None,
        metavar="MODEL[,MODEL...]",
        help="1-3 models (same backend) asked a one-shot support question first; a pair is discarded "
        "(label 0, route prefiltered) only if all say no",
    )
    g = p.add_argument_group("evidence and audit")
    g.add_argument(
        "--evidence",
        choices=["auto", "gate", "hint", "off"],
        default="auto",
        help="answer-string evidence: gate = answer-absent pairs are 0 without a call, the rest go to the judge "
        "with the matched answers as a hint; hint = every pair to the judge, hint where matched; off; "
        "auto (default) = gate where the dataset has answers, else off",
    )
    g.add_argument(
        "--audit-pairs",
        type=int,
        default=60,
        metavar="K",
        help="known pairs (half relevant) judged like pool pairs to measure the judge (default: 60; 0: none)",
    )
    g.add_argument(
        "--gate-audit",
        type=int,
        default=0,
        metavar="N",
        help="answer-absent pairs the LLM judge also sees, a trust check of what the gate drops: N LLM calls of fixed "
        "cost that the estimate does not use (a gate zero's P comes from the gate's miss rate on the known relevant "
        "passages, measured for free), so none by default (default: 0; 20 was the old default)",
    )
    g.add_argument("--audit-seed", type=int, default=0, help="seed of the audit samples and their mixing (default: 0)")


def _add_budget_options(p: argparse.ArgumentParser) -> None:
    """The batch size, and what bounds the costly judges' work on pool pairs."""
    p.add_argument("--batch-pairs", type=int, default=64, help="pairs per engine batch (records are written per batch)")
    g = p.add_argument_group("budget")
    g.add_argument(
        "--max-pairs",
        type=int,
        default=None,
        metavar="N",
        help="judge at most N pool pairs with the LLM, most valuable first (then those more systems retrieved, at a "
        "better rank); "
        "pairs the evidence stage or an adapter decide are free and always judged; re-run with a larger N to go on",
    )
    g.add_argument(
        "--max-minutes",
        type=float,
        default=None,
        metavar="M",
        help="start no new batch of pool pairs for a costly judge once the label runs of this configuration have "
        "spent M minutes judging pool pairs in all (kept in budget.json beside labels.jsonl: a re-run after the "
        "budget is spent asks nothing new; raise M to go on; --restart resets it). Fixed costs (a judge's fit on "
        "the reference, the audit) are paid first, reported apart and reused by later runs. M = 0: the costly "
        "judge is not loaded, fitted or audited at all; the free stages decide what they can and every other pair "
        "keeps the estimate's prior P",
    )
    g.add_argument(
        "--refine",
        choices=list(refine_judges()),
        default=None,
        help="a costly judge re-judges, most valuable first within the budget, pairs a free stage gave a P: the "
        "answer-bearing ones (answer-reader, answer-context; calibrated on --reference) or the exemplar stage's "
        "(exemplar-llm: the LLM compares the hole with its topic's nearest known relevant passage; --exemplar-llm-fit)",
    )


def spec_from_args(args: argparse.Namespace) -> ChainSpec:
    """The judge chain of ``bridge label`` / ``bridge reusability``. ``--judge auto`` (the default) puts topic
    adapters in front of ``--fallback-judge`` where topics have enough human judgments; ``adapter`` does so
    even where none has; any other judge decides every pair the evidence stage leaves."""
    adapters = {"auto": "auto", "adapter": "always"}.get(args.judge, "off")
    answer_judge = args.answer_judge if args.reference and args.answer_judge != "off" else None
    default_fallback = plain_judge() if answer_judge else answer_fallback()
    name = (args.fallback_judge or default_fallback) if adapters != "off" else args.judge
    judge = judge_spec_from_args(args, answer_judge or name, name if answer_judge else None)
    return ChainSpec(
        judge=judge,
        adapters=adapters,  # type: ignore[arg-type]
        evidence=args.evidence,
        **topic_stages_from_args(args, adapters),
        prefilter=tuple(m.strip() for m in (args.prefilter or "").split(",") if m.strip()),
        audit=AuditConfig(pairs=args.audit_pairs, gate_pairs=args.gate_audit, seed=args.audit_seed),
        llm=llm_config_from_args(args),
        cache_dir=args.cache_dir,
        progress=show_progress(args),
    )
