"""``bridge label`` (judge the pool), ``bridge judge-eval`` (judges against human labels), ``bridge evidence``.

The command line becomes a :class:`~bridge.label.chain.ChainSpec` (:func:`spec_from_args`) and nothing
else leaves this module: every other caller builds the spec itself.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bridge.config import CALIBRATIONS_MD
from bridge.errors import BridgeError
from bridge.judging import judge_traits
from bridge.judging.answer_context import AnswerContextConfig
from bridge.judging.audit import AuditConfig
from bridge.judging.cascade import CascadeConfig
from bridge.judging.dream import DebateConfig
from bridge.judging.single import SingleCallConfig
from bridge.judging.spec import JudgeSpec
from bridge.judging.topic_models import AdapterConfig
from bridge.label.chain import ANSWER_JUDGES, COSTLY_ANSWER_JUDGES, FALLBACK_JUDGES, ChainSpec
from bridge.label.value import ValueConfig
from bridge.measures import COMPARED, at
from bridge.options import (
    add_common_options,
    add_executor_options,
    add_force_option,
    add_llm_options,
    args_settings,
    at_least_two,
    dataset_from_args,
    llm_config_from_args,
    show_progress,
    workspace_from_args,
)
from bridge.stamp import stage_stamp
from bridge.trec import read_runs

if TYPE_CHECKING:
    from bridge.config import Workspace
    from bridge.datasets import Dataset
    from bridge.label.judge_eval import JudgeQuality


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
JUDGE_NAMES = ("auto", "adapter", *FALLBACK_JUDGES)


def add_judge_options(p: argparse.ArgumentParser) -> None:
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


def add_chance_line(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--adapter-chance-line",
        type=float,
        default=0.5,
        metavar="B",
        help="a topic whose cross-validated balanced-accuracy interval (95%%, Jeffreys) reaches B or below goes to "
        "the fallback judge (default: 0.5: no evidence that its adapter beats chance)",
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


def adapter_config_from_args(args: argparse.Namespace) -> AdapterConfig:
    return AdapterConfig(
        family=args.adapter_family,
        min_judgments=args.adapter_min_judgments,
        folds=args.adapter_folds,
        seed=args.adapter_seed,
        chance_low=args.adapter_chance_line,
    )


def spec_from_args(args: argparse.Namespace) -> ChainSpec:
    """The judge chain of ``bridge label`` / ``bridge reusability``. ``--judge auto`` (the default) puts topic
    adapters in front of ``--fallback-judge`` where topics have enough human judgments; ``adapter`` does so
    even where none has; any other judge decides every pair the evidence stage leaves."""
    adapters = {"auto": "auto", "adapter": "always"}.get(args.judge, "off")
    answer_judge = args.answer_judge if args.reference and args.answer_judge != "off" else None
    default_fallback = "llmjudge" if answer_judge else "cascade"
    name = (args.fallback_judge or default_fallback) if adapters != "off" else args.judge
    judge = judge_spec_from_args(args, name)
    if answer_judge:
        judge = replace(judge, name=answer_judge, answer_context_fallback=name)
    return ChainSpec(
        judge=judge,
        adapters=adapters,  # type: ignore[arg-type]
        adapter=adapter_config_from_args(args),
        evidence=args.evidence,
        prefilter=tuple(m.strip() for m in (args.prefilter or "").split(",") if m.strip()),
        audit=AuditConfig(pairs=args.audit_pairs, gate_pairs=args.gate_audit, seed=args.audit_seed),
        llm=llm_config_from_args(args),
        cache_dir=args.cache_dir,
        progress=show_progress(args),
    )


def endpoint_lines(llm: Any) -> list[str]:
    """Per-endpoint calls, errors and tokens/s of an ``openai`` backend (none for embedded backends)."""
    rows = llm.backend.summary() if llm is not None and hasattr(llm.backend, "summary") else []
    return [
        f"endpoint {r['endpoint']}: {r['calls']} calls, {r['errors']} errors, "
        f"{r['prompt_tokens'] + r['completion_tokens']} tokens, {r['tokens_per_s']:.0f} tokens/s"
        for r in rows
    ]


def add_label_options(p: argparse.ArgumentParser) -> None:
    """Judge, evidence and audit options shared by ``label`` and ``reusability``."""
    add_llm_options(p)
    add_judge_options(p)
    p.add_argument(
        "--judge",
        choices=JUDGE_NAMES,
        default="auto",
        help="auto (default): topic adapters where topics have enough human judgments, --fallback-judge for "
        "the rest; adapter: the same even if no topic qualifies; or one judge for every pair: cascade, dream, "
        "a single-call baseline (llmjudge, umbrela), or a reference judge that calls no model: qrels (answers "
        "from --judge-qrels), constant (--constant-label for every pair) or random (relevant with the topic's "
        "share of relevant judgments, --random-seed)",
    )
    p.add_argument(
        "--fallback-judge",
        choices=FALLBACK_JUDGES,
        default=None,
        help="the judge for the pairs no earlier stage decides (default: cascade: calibrated one-pass score, "
        "DREAM debate for the uncertain band, people for debate disagreements; with --reference, where the "
        "answer-context judge decides the answer-bearing pairs: llmjudge, one call for the few pairs without an "
        "answer match that reach it, the gate audit's)",
    )
    g = p.add_argument_group("topic adapters")
    g.add_argument("--adapter-family", choices=["frozen-lr", "finetune-ce"], default="frozen-lr")
    g.add_argument(
        "--adapter-min-judgments",
        type=int,
        default=32,
        metavar="N",
        help="a topic gets an adapter with at least N human judgments, 4 or more of each class (default: 32)",
    )
    g.add_argument("--adapter-folds", type=int, default=5, help="cross-validation folds inside a topic (default: 5)")
    g.add_argument("--adapter-seed", type=int, default=0)
    add_chance_line(g)
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
        "the reference, the audit) are paid first, reported apart and reused by later runs",
    )
    g.add_argument(
        "--refine",
        choices=list(COSTLY_ANSWER_JUDGES),
        default=None,
        help="a costly answer judge that re-judges, most valuable first and within the budget, the answer-bearing "
        "pairs the free answer judge gave a P (answer-reader: with the reader's likelihood of the answers; "
        "answer-context: with the LLM's one-pass P; each with its own calibration on --reference); its labels and "
        "P take the free judge's place",
    )


def add_value_options(p: argparse.ArgumentParser) -> None:
    """``bridge label``: which pairs the costly judge gets."""
    g = p.add_argument_group("value of a judgment")
    g.add_argument(
        "--no-value-order",
        dest="value_order",
        action="store_false",
        help="judge every pool pair, in priority order; by default the free stages decide first and the costly "
        "judge (LLM, people) gets only the pairs whose label can help decide an open comparison of adjacent systems "
        "in runs/<ds>/, most valuable first",
    )
    g.add_argument(
        "--ask-all",
        action="store_true",
        help="value order, but ask the costly judge about value-0 pairs too (after the others)",
    )
    g.add_argument(
        "--settle-measures",
        default=at(COMPARED),
        metavar="M@K,...",
        help=f"the measures whose comparisons a judgment may decide (default: {at(COMPARED)})",
    )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "label",
        help="judge pool pairs (evidence, topic adapters, cascade, DREAM, people) -> labels.jsonl, augmented.qrels",
        description="Judge every unjudged pool pair, cheapest trustworthy stage first: answer evidence decides "
        "answer-free pairs for free (datasets with answers), topic adapters learned from each topic's own human "
        "judgments label topics that have enough of them, and the rest go to the fallback judge (by default the "
        "cascade: one calibrated LLM pass, a DREAM debate for the uncertain band, people for disagreements). "
        "Known pairs judged like pool pairs measure the judge (reports/<ds>/judge-audit.json). Resumes from "
        "labels.jsonl; every LLM call is cached.",
    )
    add_common_options(p)
    add_label_options(p)
    add_value_options(p)
    p.add_argument(
        "--restart", action="store_true", help="start labels.jsonl and audit.jsonl afresh (old files kept as .bak)"
    )
    add_force_option(p)
    add_executor_options(p)
    p.add_argument("--price-prompt", type=float, default=0.0, help="$ per million prompt tokens (cost estimate)")
    p.add_argument("--price-completion", type=float, default=0.0, help="$ per million completion tokens")
    p.set_defaults(func=cmd_label)

    p = sub.add_parser(
        "judge-eval",
        help="measure judges against human labels (bAcc, escalation, kappa) -> reports/<ds>/judge-eval.md",
        description="Run DREAM and the baseline judges on a balanced sample of human-judged pairs.",
    )
    add_common_options(p)
    add_llm_options(p)
    add_judge_options(p)
    p.set_defaults(dataset="dl19")
    p.add_argument(
        "--sample",
        type=int,
        default=None,
        help="balanced sample size (default: 200); with --reference, a seeded subsample of the reference "
        "(default: all of it)",
    )
    p.add_argument(
        "--folds",
        type=at_least_two,
        default=2,
        help="with --reference: judges that fit on known pairs are cross-fitted over this many parts of the "
        "reference's questions (default: 2)",
    )
    p.add_argument("--threshold", type=int, default=None, help="human grade counted as relevant (default: dataset's)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed")
    p.add_argument(
        "--methods",
        default=None,
        help=f"comma-separated judges to compare (default: {DEFAULT_EVAL_METHODS}; with --reference: "
        f"{DEFAULT_REFERENCE_METHODS}); also umbrela, and adapter (topic adapters: within-topic cross-validation, "
        "its row on the same sample, and learning curves); answer-string says relevant to every pair that holds "
        "an answer",
    )
    p.add_argument(
        "--calibration-sample",
        type=int,
        default=100,
        help="human-judged pairs, outside the evaluation sample, that calibrated and cascade are fitted on",
    )
    p.add_argument(
        "--judge",
        dest="methods",
        help="a single judge to measure (same as --methods NAME), e.g. --judge adapter",
    )
    g = p.add_argument_group("topic adapters")
    g.add_argument("--adapter-family", choices=["frozen-lr", "finetune-ce"], default="frozen-lr")
    g.add_argument("--adapter-min-judgments", type=int, default=32, metavar="N")
    g.add_argument("--adapter-folds", type=int, default=5)
    g.add_argument("--adapter-seed", type=int, default=0)
    add_chance_line(g)
    g.add_argument(
        "--curve-families",
        default="frozen-lr",
        help="families of the learning curve (comma-separated; finetune-ce takes minutes per point)",
    )
    g.add_argument("--curve-sizes", default="8,16,32,64,128", help="judgments per topic of the learning curve")
    p.add_argument("--injection", type=int, default=0, metavar="N", help="also inject N non-relevant pairs")
    p.set_defaults(func=cmd_judge_eval)

    p = sub.add_parser(
        "evidence",
        help="answer-string evidence: recall on gold passages, what it finds in the pool, what it misses",
        description="Measure the evidence stage without any model: its recall on the original relevant passages "
        "(the gate would set the missed ones to 0), how many pool pairs hold an answer, and samples of both.",
    )
    add_common_options(p)
    p.add_argument("--show", type=int, default=5, help="examples to print of misses and of matched pool pairs")
    p.set_defaults(func=cmd_evidence)


def cmd_label(args: argparse.Namespace) -> int:
    from bridge.label.chain import build_chain, build_refine_chain
    from bridge.label.run import LabelOptions, LabelPaths, Pricing, label_pool

    ws = workspace_from_args(args)
    ds = dataset_from_args(args)
    spec = spec_from_args(args)
    paths = LabelPaths.of_workspace(ws, ds.slug)
    reference = [Path(args.reference), Path(args.reference).parent / "fits"] if args.reference else []  # its fits too
    read = (ws.runs(ds.slug), paths.labels.parent, paths.audit_report, *reference)
    stamp = stage_stamp(paths.labels.parent, "label", args_settings(args), read, dataset=ds.fingerprint)
    if (skipped := stamp.skip_message(args.force or args.restart)) is not None:
        print(skipped)
        return 0
    chain, choice, llm = build_chain(spec, ds)
    options = LabelOptions(
        restart=args.restart,
        batch_pairs=args.batch_pairs,
        audit=spec.audit,
        pricing=Pricing(args.price_prompt, args.price_completion),
        progress=spec.progress,
        max_pairs=args.max_pairs,
        max_minutes=args.max_minutes,
    )
    if args.value_order:
        runs = read_runs(ws.runs(ds.slug))
        if runs:
            value = ValueConfig(args.settle_measures, ask_all=args.ask_all)
            options = replace(options, runs=runs, value=value)
        else:
            print(f"no runs in {ws.runs(ds.slug)}: every pool pair is judged (no value order)")
    if args.executor == "ray":
        from bridge.executors import RayConfig
        from bridge.label.distributed import DatasetRef, ray_runners

        dataset = DatasetRef(args.dataset, args.data_dir, args.limit)
        runner, scorer = ray_runners(spec, dataset, RayConfig(args.workers, args.ray_address, args.worker_cpus))
        options = replace(options, runner=runner, scorer=scorer)
    if args.refine:
        if not args.reference:
            raise BridgeError("--refine needs --reference: the costly answer judge is calibrated on it")
        options = replace(options, refine=build_refine_chain(spec, args.refine, ds, llm))
    head = f"{ds.name}: {choice}" + (f"; costly answer judge {args.refine} in value order" if args.refine else "")
    print(head)
    if ds.has_answers and not args.reference and spec.evidence != "off":
        print(
            f"note: {ds.name}'s answer-bearing pairs go to {spec.judge.name}; with --reference FILE (labelled "
            "answer-bearing pairs, e.g. bench/data/nq-answer-reference/labels-first.tsv) an answer judge calibrated "
            "on them gives every such pair a P"
        )
    summary = label_pool(ds, chain, paths, options)
    text = "\n".join([f"{ds.name} ({chain.pipeline.config_id})", *summary.lines(), *endpoint_lines(llm)])
    text += f"\n-> {paths.labels}\n-> {paths.augmented}\n-> {paths.audit}\n-> {paths.audit_report}"
    print(text)
    if args.max_pairs is None:  # a pair cap is per invocation: a second run goes on, so it is never up to date
        stamp.write(f"{head}\n{text}")
    return 0


def cmd_evidence(args: argparse.Namespace) -> int:
    from bridge.judging import cases_for
    from bridge.judging.evidence import gold_recall, matched_answers
    from bridge.pool import read_pool

    ws = workspace_from_args(args)
    ds = dataset_from_args(args)
    if not ds.has_answers:
        raise BridgeError(f"{ds.name} has no answers: the evidence stage does not apply (it is off for this dataset)")
    recall = gold_recall(ds)
    queries = {q.qid: q for q in ds.whole().queries}
    rate = "n/a" if recall.rate is None else f"{recall.rate:.4f}"
    scope = " (all questions, not only the --limit ones)" if ds.limit else ""
    print(f"{ds.name}: evidence recall on the original relevant passages{scope} {recall.found}/{recall.total} = {rate}")
    for qid, docid in recall.missed[: args.show]:
        doc = ds.corpus.get(docid)
        text = doc.contents().replace("\n", " ")[:240] if doc else ""
        print(f"  missed q{qid} {docid}: answers {list(queries[qid].answers)}; passage: {text}")
    pool_path = ws.pool_file(ds.slug)
    if pool_path.exists():
        topics = set(ds.qids)
        cases = cases_for(ds, [e for e in read_pool(pool_path) if e.qid in topics])
        found = [(c, matched_answers(c.answers, c.chunk)) for c in cases if c.answers]
        present = [(c, m) for c, m in found if m]
        share = len(present) / len(found) if found else 0.0
        print(
            f"pool {pool_path}: {len(present)} of {len(found)} pairs contain an answer ({share:.1%}, over "
            f"{len({c.qid for c, _ in present})} queries): with --evidence gate the other {len(found) - len(present)} "
            "are 0 without a call"
        )
        for case, matched in present[: args.show]:
            print(f"  q{case.qid} {case.docid} holds {list(matched)}: {case.chunk.replace(chr(10), ' ')[:200]}")
    return 0


def cmd_judge_eval(args: argparse.Namespace) -> int:
    from bridge.judging import build_judge
    from bridge.label.judge_eval import reliability_figure, run_judge_eval, write_report
    from bridge.llm import open_llm

    ws = workspace_from_args(args)
    ds = dataset_from_args(args)
    threshold = args.threshold if args.threshold is not None else ds.relevance_threshold
    ds = replace(ds, relevance_threshold=threshold)
    chosen = args.methods or (DEFAULT_REFERENCE_METHODS if args.reference else DEFAULT_EVAL_METHODS)
    methods = [m.strip() for m in chosen.split(",") if m.strip()]
    unknown = sorted(set(methods) - set(EVAL_METHODS))
    if unknown:
        raise BridgeError(f"unknown judge(s) {', '.join(unknown)}; choose from {', '.join(EVAL_METHODS)}")
    if args.reference:
        return judge_eval_on_reference(args, ws, ds, methods)
    sample_size = 200 if args.sample is None else args.sample
    llm_methods = [m for m in methods if m not in ("adapter", "lara")]
    if "lara" in methods and "calibrated" not in llm_methods:
        llm_methods.insert(0, "calibrated")  # LARA reads the calibrated judge's scores
    llm = open_llm(llm_config_from_args(args), ws.llm_cache, progress=show_progress(args)) if llm_methods else None
    judges = {m: (lambda m=m: build_judge(judge_spec_from_args(args, m), llm)) for m in llm_methods}
    out_dir = ws.reports(ds.slug) / "judge-eval"
    qualities, injections = run_judge_eval(
        ds,
        judges,
        out_dir,
        sample_size,
        threshold,
        args.seed,
        args.injection,
        progress=show_progress(args),
        calibration_pairs=args.calibration_sample,
        lara="lara" in methods,
    )
    adapter_eval = None
    if "adapter" in methods:
        from bridge.judging.adapter import TopicAdapterJudge
        from bridge.label.judge_eval import adapter_lines, adapter_quality, balanced_sample, evaluate_adapter

        adapter = TopicAdapterJudge(
            ds, None, adapter_config_from_args(args), args.cache_dir, progress=show_progress(args)
        )
        families = [f.strip() for f in args.curve_families.split(",") if f.strip()]
        sizes = [int(n) for n in args.curve_sizes.split(",") if n.strip()]
        adapter_eval = evaluate_adapter(ds, adapter, families, sizes, progress=show_progress(args))
        sample = balanced_sample(ds, sample_size, threshold, args.seed)
        qualities.append(adapter_quality(sample, adapter, args.seed))
    model = llm.model_id if llm is not None else "-"
    figure = reliability_figure(qualities, out_dir.parent / "figures" / "reliability.png")
    md, csv_path = write_report(out_dir, ds, model, qualities, injections, sample_size, threshold, adapter_eval, figure)
    print(f"judge quality on {ds.name} ({sample_size} pairs, relevant = grade >= {threshold}) with {model}")
    print_quality_table(qualities)
    for i in injections:
        print(f"injection {i.method}: {i.flipped}/{i.compared} labels flipped ({i.to_relevant} to relevant)")
    if adapter_eval is not None:
        print("\n".join(line for line in adapter_lines(adapter_eval) if line and not line.startswith("## ")))
    print(f"-> {md}\n-> {csv_path}")
    return 0


def print_quality_table(qualities: Sequence[JudgeQuality]) -> None:
    from bridge.label.judge_eval import report_rows

    print(
        f"{'method':14s} {'bAcc [95% CI]':>20s} {'rec0':>6s} {'rec1':>6s} {'escal':>6s} {'kappa [95% CI]':>21s} "
        f"{'AUC [95% CI]':>20s} {'calls':>6s} {'s/pair':>7s}"
    )
    for r in report_rows(qualities):
        bacc = f"{r['balanced_accuracy']} [{r['balanced_accuracy_ci']}]"
        kappa = f"{r['cohen_kappa']} [{r['cohen_kappa_ci']}]"
        auc = f"{r['auc_p_yes']} [{r['auc_p_yes_ci']}]"
        print(
            f"{r['method']:14s} {bacc:>20s} {r['recall_irrelevant']:>6s} {r['recall_relevant']:>6s} "
            f"{r['escalation_ratio']:>6s} {kappa:>21s} {auc:>20s} {r['calls_per_pair']:>6s} "
            f"{r['seconds_per_pair']:>7s}"
        )


def judge_eval_on_reference(args: argparse.Namespace, ws: Workspace, ds: Dataset, methods: Sequence[str]) -> int:
    """``judge-eval --reference``: every judge on the reference's pairs, asked as the pipeline asks pool pairs."""
    from pathlib import Path

    from bridge.judging import build_judge
    from bridge.judging.reference_labels import read_reference, read_reference_design, read_reference_facts, subsample
    from bridge.kinds import pair_kind
    from bridge.label.judge_eval import (
        kind_qualities,
        kind_quality_lines,
        reliability_figure,
        run_reference_eval,
        write_report,
    )
    from bridge.llm import open_llm

    unknown = sorted(set(methods) - set(REFERENCE_METHODS))
    if unknown:
        raise BridgeError(
            f"judge(s) {', '.join(unknown)} cannot be measured on a reference; "
            f"choose from {', '.join(REFERENCE_METHODS)}"
        )
    path = Path(args.reference)
    everything = read_reference(path)
    pairs = subsample(everything, args.sample, args.seed)
    facts = read_reference_facts(path)
    design = read_reference_design(path)
    qids = set(ds.qids)
    missing = [p for p in pairs if ds.corpus.get(p.docid) is None or p.qid not in qids]
    if missing:
        raise BridgeError(
            f"{path}: {len(missing)} pair(s) are not in {ds.name} (first: {missing[0].qid} {missing[0].docid}); "
            "is --dataset right, and is --limit off?"
        )
    specs = {m: replace(judge_spec_from_args(args, m), answer_context_fallback=None) for m in methods}
    needs_llm = any(judge_traits(spec.name).calls_llm for spec in specs.values())
    llm = open_llm(llm_config_from_args(args), ws.llm_cache, progress=show_progress(args)) if needs_llm else None
    judges = {m: (lambda m=m: build_judge(specs[m], llm)) for m in methods}
    model_slug = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(args.model).name if llm is not None else "no-llm")
    name = f"judge-eval-{path.stem}" + (f"-{len(pairs)}" if len(pairs) < len(everything) else "") + f"-{model_slug}"
    out_dir = ws.reports(ds.slug) / name
    relevant = sum(p.relevant for p in pairs)
    source = f"{path}"
    qualities = run_reference_eval(
        ds, judges, pairs, out_dir, source, args.folds, args.seed, show_progress(args), facts, design
    )
    kinds = {(p.qid, p.docid): pair_kind(ds, p.qid, p.docid) for p in pairs}
    if design:
        wrong = [k for k in kinds if k not in design or design[k].kind != kinds[k]]
        if wrong:
            raise BridgeError(
                f"{path.with_name('design.tsv')}: pair {wrong[0]} is missing from the sampling design or drawn as "
                f"another kind than the dataset makes it ({kinds[wrong[0]]!r}); {len(wrong)} such pair(s)"
            )
    weights = {key: 1.0 / design[key].probability for key in kinds if key in design}
    per_kind = [row for q in qualities for row in kind_qualities(q, kinds, weights)]
    model = llm.model_id if llm is not None else "-"
    population = (
        f"{len(pairs)} pairs of the reference `{path}` ({relevant} relevant; labels by reading under its written "
        f"criterion: the maintainers' reading, not a crowd's), each asked as the label pipeline asks a pool pair "
        f"(behind the evidence gate, matched answers as a hint). Judges that fit on known pairs are cross-fitted "
        f"over {args.folds} parts of the reference's questions: every pair is scored by a judge fitted on the "
        "other parts. answer-string says relevant to every pair that holds an answer."
    )
    by_kind = [
        "",
        "## Per kind of hole ("
        + (f"design weights from {path.with_name('design.tsv')}" if design else "no design.tsv: every pair weighs 1")
        + ")",
        "",
        "Cross-fitted as above. The `all` row weights each pair by its design weight (1 / inclusion probability), so "
        "it stands for the pool's answer-bearing holes, not for the sample; bAcc and kappa are of the judge's own "
        "labels; intervals: a bootstrap of questions within kinds.",
        "",
        *kind_quality_lines(per_kind),
    ]
    figure = reliability_figure(qualities, out_dir.parent / "figures" / f"reliability-{name}.png")
    md, csv_path = write_report(
        out_dir, ds, model, qualities, [], len(pairs), ds.relevance_threshold, None, figure, population, name, by_kind
    )
    print(f"judge quality on {len(pairs)} reference pairs of {ds.name} ({relevant} relevant) with {model}")
    print_quality_table(qualities)
    print("\n".join(by_kind[1:]))
    calibrated = answer_calibrations(ds, [m for m in methods if m in ANSWER_JUDGES], judges,
                                     pairs, facts, source, design)  # fmt: skip
    if calibrated:
        (out_dir / CALIBRATIONS_MD).write_text("\n".join(calibrated) + "\n", encoding="utf-8")
        print("\n".join(calibrated))
    print(f"-> {md}\n-> {csv_path}" + (f"\n-> {out_dir / CALIBRATIONS_MD}" if calibrated else ""))
    return 0


def answer_calibrations(ds, methods, judges, pairs, facts, source, design=None) -> list[str]:
    """Each answer judge calibrated on every reference pair as ``bridge label`` calibrates it (strata chosen by
    cross-validation, its quality cross-fitted by question: ECE, AUC, bAcc and the coverage of the held-out share
    relevant, overall and per stratum)."""
    from bridge.judging import cases_for
    from bridge.judging.answer_context import calibration_lines
    from bridge.judging.evidence import matched_answers
    from bridge.pool import PoolEntry

    out: list[str] = []
    cases = cases_for(ds, [facts.get((p.qid, p.docid), PoolEntry(p.qid, p.docid, (), 0)) for p in pairs])
    views = [replace(c, evidence=matched_answers(c.answers, c.chunk)) for c in cases]
    kept = [(p, v) for p, v in zip(pairs, views, strict=True) if v.evidence]
    for method in methods:
        judge = judges[method]()
        calibration = judge.fit([v for _, v in kept], [int(p.relevant) for p, _ in kept], source, design)
        out += [f"calibration of {method} on the reference (as `bridge label` fits it):"]
        out += calibration_lines(calibration)
    return out
