"""The judges' options, shared by ``bridge label``, ``judge-eval``, ``score`` and ``reusability``, and the
:class:`~bridge.judging.spec.JudgeSpec` they describe (:func:`judge_spec_from_args`)."""

from __future__ import annotations

import argparse

from bridge.core.errors import BridgeError
from bridge.judging.learned.answer_context import AnswerContextConfig
from bridge.judging.llm.cascade import CascadeConfig
from bridge.judging.llm.dream import DebateConfig
from bridge.judging.llm.single import SingleCallConfig
from bridge.judging.spec import JudgeSpec
from bridge.label.chain import ANSWER_JUDGES


def add_judge_options(p: argparse.ArgumentParser) -> None:
    """The ``judges`` group: DREAM, the single-call judges, the reference judges, the cascade and the reference."""
    g = p.add_argument_group("judges")
    g.add_argument("--rounds", type=int, default=2, help="DREAM: maximum debate rounds R (default: 2)")
    g.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (default: 0, greedy)")
    g.add_argument("--swap-stances", action="store_true", help="DREAM: Agent B (opening 'no') speaks first")
    g.add_argument(
        "--escalate-to",
        choices=["human", "llm"],
        default="human",
        help="DREAM: persistent disagreement goes to the human review queue (default) or an LLM adjudicator",
    )
    g.add_argument(
        "--prompt-order",
        choices=["cache", "paper"],
        default="cache",
        help="DREAM: static text first for prefix caching (default) or the paper's order (identity first)",
    )
    g.add_argument("--max-tokens", type=int, default=512, help="DREAM: tokens per agent turn (default: 512)")
    g.add_argument("--grade-threshold", type=int, default=2, help="umbrela: final score counted as relevant")
    g.add_argument(
        "--judge-qrels",
        default=None,
        metavar="FILE",
        help="qrels judge: answer from this TREC qrels file (pairs it does not judge stay undecided)",
    )
    g.add_argument(
        "--constant-label", type=int, choices=[0, 1], default=1, help="constant judge: the answer for every pair"
    )
    g.add_argument(
        "--random-seed",
        type=int,
        default=0,
        help="random judge (relevant with the topic's share of relevant judgments): the seed of every pair's coin",
    )
    g.add_argument(
        "--band",
        default="0.2,0.8",
        metavar="LOW,HIGH",
        help="cascade: a calibrated P(relevant) in [LOW, HIGH] goes to the DREAM debate (default: 0.2,0.8)",
    )
    g.add_argument(
        "--debate-share",
        type=float,
        default=None,
        metavar="S",
        help="cascade: instead of --band, send this share of the pairs (those closest to P = 0.5) to the debate",
    )
    g.add_argument(
        "--max-debate-share",
        type=float,
        default=0.1,
        metavar="S",
        help="cascade: when more than this share of the pairs falls inside --band, debate only the share closest "
        "to P = 0.5 (default: 0.1; 1 = no cap)",
    )
    g.add_argument("--calibration", choices=["isotonic", "platt"], default="isotonic", help="cascade calibration")
    add_reference_options(g)
    g.add_argument(
        "--calibration-pairs",
        type=int,
        default=60,
        help="cascade: known pairs (half relevant, not audited) the calibration is fitted on (default: 60)",
    )


def add_reference_options(g: argparse._ArgumentGroup) -> None:
    """``--reference`` and the answer judge it calibrates."""
    g.add_argument(
        "--reference",
        default=None,
        metavar="FILE",
        help="labelled answer-bearing pairs (qid<TAB>docid<TAB>label, read under a written criterion; a random "
        "sample of the pool's answer-bearing holes, with their pool facts in pairs.tsv beside it), e.g. "
        "bench/data/nq-answer-reference/labels-first.tsv: the answer judge is calibrated on them (strata chosen by "
        "cross-validation, bootstrap draws) and its quality measured cross-fitted by question",
    )
    g.add_argument(
        "--answer-judge",
        choices=[*ANSWER_JUDGES, "off"],
        default="answer-context",
        help="label: with --reference, the judge of the pairs that hold an answer string (default: answer-context, "
        "a calibration over where the answer sits and the LLM's one-pass P; answer-lexical: the same without "
        "the LLM, no call; answer-reader: with the reader's likelihood of the answers with and without the passage; "
        "off: the fallback judge decides them too)",
    )


def judge_spec_from_args(args: argparse.Namespace, name: str) -> JudgeSpec:
    """The judge ``name`` with the settings of the command line."""
    try:
        low, high = (float(x) for x in args.band.split(","))
    except ValueError:
        raise BridgeError(f"--band must be LOW,HIGH (two numbers), got {args.band!r}") from None
    debate = DebateConfig(
        rounds=args.rounds,
        temperature=args.temperature,
        swap_stances=args.swap_stances,
        escalate_to=args.escalate_to,
        prompt_order=args.prompt_order,
        max_tokens=args.max_tokens,
    )
    cascade = CascadeConfig(
        low, high, args.debate_share, args.max_debate_share, args.calibration, args.calibration_pairs
    )
    single = SingleCallConfig(temperature=args.temperature, grade_threshold=args.grade_threshold)
    answer_context = AnswerContextConfig(args.reference)
    if name == "answer-string":
        return JudgeSpec("constant", single, debate, cascade, constant_label=1, answer_context=answer_context)
    return JudgeSpec(
        name,
        single,
        debate,
        cascade,
        args.judge_qrels,
        args.constant_label,
        answer_context=answer_context,
        random_seed=args.random_seed,
    )
