"""``bridge label`` (judge the pool) and ``bridge judge-eval`` (judge quality against human labels)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from bridge.cli import add_common_options, add_llm_options, dataset_from_args, llm_config_from_args, workspace_from_args
from bridge.errors import BridgeError

LLM_JUDGES = ("cascade", "dream", "llmjudge", "umbrela")
FALLBACK_JUDGES = (*LLM_JUDGES, "qrels", "constant")
EVAL_METHODS = ("llmjudge", "calibrated", "lara", "dream", "cascade", "umbrela", "adapter")
DEFAULT_EVAL_METHODS = "llmjudge,calibrated,lara,dream,cascade"
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
    g.add_argument(
        "--calibration-pairs",
        type=int,
        default=60,
        help="cascade: known pairs (half relevant, not audited) the calibration is fitted on (default: 60)",
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


def judge_options(
    name: str, args: argparse.Namespace, dataset: Any = None, default_qrels: Any = None
) -> dict[str, Any]:
    if name == "qrels":
        qrels = args.judge_qrels or default_qrels
        if qrels is None:
            raise BridgeError("--judge qrels needs --judge-qrels FILE (the qrels to answer from)")
        threshold = dataset.relevance_threshold if dataset is not None else 1
        return {"qrels": qrels, "threshold": threshold, "source": "the dataset's original qrels"}
    if name == "constant":
        return {"label": args.constant_label}
    if name == "dream" or name == "cascade":
        return {
            "rounds": args.rounds,
            "temperature": args.temperature,
            "swap_stances": args.swap_stances,
            "escalate_to": args.escalate_to,
            "prompt_order": args.prompt_order,
            "max_tokens": args.max_tokens,
        }
    options: dict[str, Any] = {"temperature": args.temperature}
    if name == "umbrela":
        options["grade_threshold"] = args.grade_threshold
    return options


def make_judge(name: str, llm: Any, args: argparse.Namespace, dataset: Any = None, default_qrels: Any = None) -> Any:
    import bridge.judging.cascade
    import bridge.judging.dream
    import bridge.judging.reference
    import bridge.judging.single  # noqa: F401 - these modules register their judges
    from bridge.judging import JUDGES

    if name == "cascade":
        return make_cascade(llm, args)
    if name not in JUDGES:
        raise BridgeError(f"unknown judge {name!r}; choose from {', '.join(sorted(JUDGES))}")
    return JUDGES[name](llm, **judge_options(name, args, dataset, default_qrels))


def make_cascade(llm: Any, args: argparse.Namespace) -> Any:
    from bridge.judging.cascade import CalibratedJudge, CascadeConfig, CascadeJudge
    from bridge.judging.dream import DebateConfig, DebateEngine
    from bridge.judging.single import SingleCallConfig

    try:
        low, high = (float(x) for x in args.band.split(","))
    except ValueError:
        raise BridgeError(f"--band must be LOW,HIGH (two numbers), got {args.band!r}") from None
    config = CascadeConfig(
        low, high, args.debate_share, args.max_debate_share, args.calibration, args.calibration_pairs
    )
    debate = DebateEngine(llm, DebateConfig(**judge_options("dream", args)))
    return CascadeJudge(CalibratedJudge(llm, SingleCallConfig(temperature=args.temperature)), debate, config)


def adapter_from_args(args: argparse.Namespace, dataset: Any, fallback: Any) -> Any:
    from bridge.judging.adapter import AdapterConfig, TopicAdapterJudge

    config = AdapterConfig(
        family=args.adapter_family,
        min_judgments=args.adapter_min_judgments,
        folds=args.adapter_folds,
        seed=args.adapter_seed,
        chance_low=args.adapter_chance_line,
    )
    return TopicAdapterJudge(dataset, fallback, config, args.cache_dir, progress=not args.quiet)


def build_chain(
    args: argparse.Namespace, dataset: Any, default_qrels: Any = None, llm: Any = None
) -> tuple[Any, str, Any]:
    """The label run's judge chain from the command line (evidence stage, topic adapters, prefilter,
    the judge), a line saying what was chosen and why, and the LLM (None where no judge calls one).
    ``llm``: an LLM already opened by an earlier chain of the same command line, to reuse.

    ``--judge auto`` (the default) puts topic adapters in front of ``--fallback-judge`` when at least
    one topic has enough human judgments to learn from, and uses the fallback judge alone otherwise.
    """
    from bridge.judging.evidence import EvidenceConfig
    from bridge.judging.single import PrefilteredJudge, SupportJudge
    from bridge.label import JudgeChain
    from bridge.llm import open_llm

    ws = workspace_from_args(args)
    config = llm_config_from_args(args)
    name = args.fallback_judge if args.judge in ("auto", "adapter") else args.judge
    needs_llm = name in LLM_JUDGES or args.prefilter
    if needs_llm and llm is None:
        llm = open_llm(config, ws.llm_cache, progress=not args.quiet)
    judge = make_judge(name, llm if needs_llm else None, args, dataset, default_qrels)
    if args.prefilter:
        models = [m.strip() for m in args.prefilter.split(",") if m.strip()]
        voters = [SupportJudge(open_llm(replace(config, model=m), ws.llm_cache)) for m in models]
        judge = PrefilteredJudge(voters, judge)
    adapter = None
    why = f"judge {name}"
    if args.judge in ("auto", "adapter"):
        candidate = adapter_from_args(args, dataset, judge)
        qualified = [q for q in dataset.qids if candidate.qualifies(q)[0]]
        if qualified or args.judge == "adapter":
            adapter = candidate
            why = (
                f"judge adapter ({args.adapter_family}): {len(qualified)} of {len(dataset.qids)} topics have "
                f">= {args.adapter_min_judgments} human judgments of both classes to learn from; "
                f"the others go to {name}"
            )
        else:
            why = (
                f"judge {name}: no topic has >= {args.adapter_min_judgments} human judgments of both classes, "
                "so topic adapters cannot be trained"
            )
    mode = evidence_mode(args.evidence, dataset.has_answers)
    chain = JudgeChain.of(judge, EvidenceConfig(mode), adapter)  # type: ignore[arg-type]
    return chain, f"{why}; evidence {mode}", llm


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
        "from --judge-qrels) or constant (--constant-label for every pair)",
    )
    p.add_argument(
        "--fallback-judge",
        choices=FALLBACK_JUDGES,
        default="cascade",
        help="the judge for the pairs no earlier stage decides (default: cascade: calibrated one-pass score, "
        "DREAM debate for the uncertain band, people for debate disagreements)",
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
        help="known pairs (half relevant) mixed blind into the run to measure the judge (default: 60; 0: none)",
    )
    g.add_argument(
        "--gate-audit",
        type=int,
        default=20,
        metavar="N",
        help="answer-absent pairs the LLM judge also sees, to estimate what the gate drops (default: 20)",
    )
    g.add_argument("--audit-seed", type=int, default=0, help="seed of the audit samples and their mixing (default: 0)")
    p.add_argument("--batch-pairs", type=int, default=64, help="pairs per engine batch (records are written per batch)")
    g = p.add_argument_group("budget")
    g.add_argument(
        "--max-pairs",
        type=int,
        default=None,
        metavar="N",
        help="judge at most N pool pairs with the LLM, those more systems retrieved (then at a better rank) first; "
        "pairs the evidence stage or an adapter decide are free and always judged; re-run with a larger N to go on",
    )
    g.add_argument(
        "--max-minutes",
        type=float,
        default=None,
        metavar="M",
        help="start no new batch of pool pairs after M minutes (finished pairs are kept; audit pairs still run)",
    )


def add_executor_options(
    p: argparse.ArgumentParser,
    what: str = "judge chunks of queries on Ray workers that each hold the judge (models loaded once per worker)",
) -> None:
    g = p.add_argument_group("executor")
    g.add_argument(
        "--executor",
        choices=["local", "ray"],
        default="local",
        help=f"local (default): this process; ray: {what}; this process alone writes the files "
        "(needs pip install -e '.[ray]')",
    )
    g.add_argument("--ray-address", default=None, help="a running Ray cluster (default: start a local Ray runtime)")
    g.add_argument("--workers", type=int, default=2, help="Ray workers (default: 2)")
    g.add_argument("--worker-cpus", type=float, default=1.0, help="CPUs per Ray worker (default: 1)")


def ray_runners(args: argparse.Namespace) -> tuple[Any, Any]:
    """``LabelOptions.runner`` and ``LabelOptions.scorer`` for ``--executor ray``: workers rebuild the chain
    from this command line (and, to judge, the driver's prepared state)."""
    from functools import partial

    from bridge.executors import DistributedRunner, RayConfig, RayMapper

    mapper = RayMapper(RayConfig(args.workers, args.ray_address, args.worker_cpus))

    def runner(chain: Any) -> Any:
        return DistributedRunner(mapper, partial(worker_chain, args, chain.state()))

    return runner, lambda chain: runner(chain).scores


def worker_chain(args: argparse.Namespace, state: Any) -> Any:
    """The driver's judge chain, rebuilt on a worker: same command line, same prepared state."""
    quiet = argparse.Namespace(**{**vars(args), "quiet": True})
    chain, _, _ = build_chain(quiet, dataset_from_args(quiet))
    chain.restore(state)
    return chain


def audit_config_from_args(args: argparse.Namespace) -> Any:
    from bridge.judging.audit import AuditConfig

    return AuditConfig(pairs=args.audit_pairs, gate_pairs=args.gate_audit, seed=args.audit_seed)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "label",
        help="judge pool pairs (evidence, topic adapters, cascade, DREAM, people) -> labels.jsonl, augmented.qrels",
        description="Judge every unjudged pool pair, cheapest trustworthy stage first: answer evidence decides "
        "answer-free pairs for free (datasets with answers), topic adapters learned from each topic's own human "
        "judgments label topics that have enough of them, and the rest go to the fallback judge (by default the "
        "cascade: one calibrated LLM pass, a DREAM debate for the uncertain band, people for disagreements). "
        "Known pairs mixed blind into the run measure the judge (reports/<ds>/judge-audit.json). Resumes from "
        "labels.jsonl; every LLM call is cached.",
    )
    add_common_options(p)
    add_label_options(p)
    p.add_argument(
        "--restart", action="store_true", help="start labels.jsonl and audit.jsonl afresh (old files kept as .bak)"
    )
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
    p.add_argument("--sample", type=int, default=200, help="balanced sample size (default: 200)")
    p.add_argument("--threshold", type=int, default=None, help="human grade counted as relevant (default: dataset's)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed")
    p.add_argument(
        "--methods",
        default=DEFAULT_EVAL_METHODS,
        help=f"comma-separated judges to compare (default: {DEFAULT_EVAL_METHODS}); also umbrela, and adapter "
        "(topic adapters: within-topic cross-validation, its row on the same sample, and learning curves)",
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


def evidence_mode(choice: str, has_answers: bool) -> str:
    """``auto`` -> gate where the dataset has answers, else off."""
    if choice == "auto":
        return "gate" if has_answers else "off"
    return choice


def cmd_label(args: argparse.Namespace) -> int:
    from bridge.label import LabelOptions, LabelPaths, Pricing, label_pool

    ws = workspace_from_args(args)
    ds = dataset_from_args(args)
    chain, choice, llm = build_chain(args, ds)
    paths = LabelPaths(
        ws.pool_file(ds.slug),
        ws.labels_file(ds.slug),
        ws.augmented_qrels(ds.slug),
        ws.audit_file(ds.slug),
        ws.audit_report(ds.slug),
        ws.calibration_file(ds.slug),
    )
    options = LabelOptions(
        restart=args.restart,
        batch_pairs=args.batch_pairs,
        audit=audit_config_from_args(args),
        pricing=Pricing(args.price_prompt, args.price_completion),
        progress=not args.quiet,
        max_pairs=args.max_pairs,
        max_minutes=args.max_minutes,
    )
    if args.executor == "ray":
        runner, scorer = ray_runners(args)
        options = replace(options, runner=runner, scorer=scorer)
    print(f"{ds.name}: {choice}")
    summary = label_pool(ds, chain, paths, options)
    print(f"{ds.name} ({chain.pipeline.config_id})")
    print("\n".join([*summary.lines(), *endpoint_lines(llm)]))
    print(f"-> {paths.labels}\n-> {paths.augmented}\n-> {paths.audit}\n-> {paths.audit_report}")
    return 0


def cmd_evidence(args: argparse.Namespace) -> int:
    from bridge.judging.evidence import gold_recall, matched_answers
    from bridge.label import cases_for
    from bridge.pool import read_pool

    ws = workspace_from_args(args)
    ds = dataset_from_args(args)
    if not ds.has_answers:
        raise BridgeError(f"{ds.name} has no answers: the evidence stage does not apply (it is off for this dataset)")
    recall = gold_recall(ds)
    queries = {q.qid: q for q in ds.queries}
    rate = "n/a" if recall.rate is None else f"{recall.rate:.4f}"
    print(f"{ds.name}: evidence recall on the original relevant passages {recall.found}/{recall.total} = {rate}")
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


def reliability_figure(qualities: Any, path: Any) -> Any:
    """The reliability diagram of every judge that gives a P(relevant) for each pair (None if none does)."""
    from bridge.judging.calibration import reliability
    from eval.plots import plot_reliability

    curves = {
        q.method: reliability(q.p_yes, q.truth) for q in qualities if q.scored and not q.method.startswith("lara")
    }
    return plot_reliability(curves, path) if curves else None


def cmd_judge_eval(args: argparse.Namespace) -> int:
    from bridge.judging.judge_eval import report_rows, run_judge_eval, write_report
    from bridge.llm import open_llm

    ws = workspace_from_args(args)
    ds = dataset_from_args(args)
    threshold = args.threshold if args.threshold is not None else ds.relevance_threshold
    ds = replace(ds, relevance_threshold=threshold)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = sorted(set(methods) - set(EVAL_METHODS))
    if unknown:
        raise BridgeError(f"unknown judge(s) {', '.join(unknown)}; choose from {', '.join(EVAL_METHODS)}")
    llm_methods = [m for m in methods if m not in ("adapter", "lara")]
    if "lara" in methods and "calibrated" not in llm_methods:
        llm_methods.insert(0, "calibrated")  # LARA reads the calibrated judge's scores
    llm = open_llm(llm_config_from_args(args), ws.llm_cache, progress=not args.quiet) if llm_methods else None
    judges = {m: (lambda m=m: make_judge(m, llm, args)) for m in llm_methods}
    out_dir = ws.reports(ds.slug) / "judge-eval"
    qualities, injections = run_judge_eval(
        ds,
        judges,
        out_dir,
        args.sample,
        threshold,
        args.seed,
        args.injection,
        progress=not args.quiet,
        calibration_pairs=args.calibration_sample,
        lara="lara" in methods,
    )
    adapter_eval = None
    if "adapter" in methods:
        from bridge.judging.judge_eval import adapter_lines, adapter_quality, balanced_sample, evaluate_adapter

        adapter = adapter_from_args(args, ds, fallback=None)
        families = [f.strip() for f in args.curve_families.split(",") if f.strip()]
        sizes = [int(n) for n in args.curve_sizes.split(",") if n.strip()]
        adapter_eval = evaluate_adapter(ds, adapter, families, sizes, progress=not args.quiet)
        qualities.append(adapter_quality(balanced_sample(ds, args.sample, threshold, args.seed), adapter, args.seed))
    model = llm.model_id if llm is not None else "-"
    figure = reliability_figure(qualities, out_dir.parent / "figures" / "reliability.png")
    md, csv_path = write_report(out_dir, ds, model, qualities, injections, args.sample, threshold, adapter_eval, figure)
    print(f"judge quality on {ds.name} ({args.sample} pairs, relevant = grade >= {threshold}) with {model}")
    print(
        f"{'method':10s} {'bAcc [95% CI]':>20s} {'rec0':>6s} {'rec1':>6s} {'escal':>6s} {'kappa [95% CI]':>21s} "
        f"{'AUC':>6s} {'calls':>6s}"
    )
    for r in report_rows(qualities):
        bacc = f"{r['balanced_accuracy']} [{r['balanced_accuracy_ci']}]"
        kappa = f"{r['cohen_kappa']} [{r['cohen_kappa_ci']}]"
        print(
            f"{r['method']:10s} {bacc:>20s} {r['recall_irrelevant']:>6s} {r['recall_relevant']:>6s} "
            f"{r['escalation_ratio']:>6s} {kappa:>21s} {r['auc_p_yes']:>6s} {r['calls_per_pair']:>6s}"
        )
    for i in injections:
        print(f"injection {i.method}: {i.flipped}/{i.compared} labels flipped ({i.to_relevant} to relevant)")
    if adapter_eval is not None:
        print("\n".join(line for line in adapter_lines(adapter_eval) if line and not line.startswith("## ")))
    print(f"-> {md}\n-> {csv_path}")
    return 0
