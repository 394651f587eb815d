"""The sparse-judgment benchmark (:mod:`bridge.evaluation.reusability.sparse_cuts`): a deeply judged collection cut to K
relevant passages per topic and no negatives, its pool labelled and estimated as a user's main job would, every system
compared with its score under the full judgments.

    python -m bench sparse [--dataset dl19] [--keep 1 2] [--seeds 0 1 2] [--config NAME=ARGS ...] [--people N ...]
    python -m bench sparse --dataset dl19 --fit bridge/data/exemplar-fit.json --transfer-from nfcorpus@2
    python -m bench sparse --dataset dl19 --people 0 20 40 80 --out reports/sparse-oos \
        --people-args "--exemplar-fit reports/sparse/exemplar-fit-nfcorpus.json"    # out of sample

A config is a name and the `bridge label` arguments it adds to the Makefile's for the dataset (`make -n label`):
``default`` adds none (what `make pool label eval` runs: free stages, a zero budget for the costly judge), ``open``
adds ``--judge open --exemplar off`` (no judge at all: every hole on the prior); ``--people 0 20 40 80`` adds
``people0``, ``people20``, ...: the default's labels, then simulated people answer the N random holes of `bridge
review export --random N --csv` from the hidden labels, imported and merged as a team's answers are. The runs come from
the workspace's runs/<ds>/ (retrieve the grid first: `bridge retrieve --dataset dl19 --pool-config grid`); each case
labels in its own folder under ``--out`` (resumable; `--restart` starts afresh) and the results gather in
``--out``/results.json.

``--fit FILE`` fits the exemplar judge's calibration on the dataset's cuts instead (their holes with hidden labels),
with ``--transfer-from`` naming the collection whose cuts measure the shift it carries elsewhere (both directions: this
collection's fit on the other's holes and the other's fit on these), and writes it to FILE.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.bench_eval import cpu_model
from bridge.core.shared_options_cli import DEFAULT_DATA_DIR

if TYPE_CHECKING:
    from bridge.evaluation.reusability.sparse_cuts import CaseResult

CONFIGS = {"default": "", "open": "--judge open --exemplar off"}
"""Label arguments per configuration (``--people N ...`` adds ``peopleN``: the default's, and N random holes answered
through the review, :func:`bridge.evaluation.reusability.sparse_cuts.people_through_review`)."""
FEATURES = ("exemplar_cosine", "exemplar_percentile")
"""The fit's features: the query's cosine is the dense retriever's own score, and adding it lowered the estimate's
tau on dl19 (bench/RESULTS.md, "The sparse-judgment benchmark")."""


def load(name: str, data_dir: Path) -> Any:
    """``NAME`` or ``NAME@T``: the dataset, with its relevance threshold set to T (nfcorpus@2: grade 2 relevant)."""
    from dataclasses import replace

    from bridge.datasets import load_dataset

    dataset, _, threshold = name.partition("@")
    ds = load_dataset(dataset, data_dir)
    return replace(ds, relevance_threshold=int(threshold)) if threshold else ds


def makefile_label_args(dataset: str) -> list[str]:
    """`bridge label`'s arguments as `make label DATASET=...` passes them, without the dataset and data folder."""
    printed = subprocess.run(
        ["make", "-n", "-s", "-o", "install", "-o", ".venv/.bridge-installed", "label", f"DATASET={dataset}"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    line = next(line for line in printed.splitlines() if " -m bridge label " in line)
    argv = shlex.split(line)
    argv = argv[argv.index("label") + 1 :]
    out, skip = [], False
    for token in argv:
        if skip:
            skip = False
        elif token in ("--dataset", "--data-dir", "-d"):
            skip = True
        else:
            out.append(token)
    return out


def labeller(dataset: str, extra: list[str], restart: bool) -> Any:
    """``label(ws, sparse)``: `bridge label` as the Makefile runs it for ``dataset``, with ``extra`` arguments."""
    from bridge.cli import build_parser
    from bridge.label.judge_options_cli import refine_spec_from_args
    from bridge.label.label_options_cli import spec_from_args
    from bridge.label.label_workflow import LabelStageSettings, label_stage

    def label(ws, ds):
        argv = ["label", "--dataset", dataset, "--cache-dir", str(ws.cache_dir), "-q"]
        args = build_parser().parse_args([*argv, *makefile_label_args(dataset), *extra])
        spec = spec_from_args(args)
        settings = LabelStageSettings(
            spec=spec, restart=restart, batch_pairs=args.batch_pairs, max_pairs=args.max_pairs,
            max_minutes=args.max_minutes, refine=refine_spec_from_args(args, spec.judge), reference=args.reference,
        )  # fmt: skip
        return label_stage(ws, ds, settings, say=lambda text: None)

    return label


def run_benchmark(args: argparse.Namespace) -> int:
    from bridge.core.layout import Workspace
    from bridge.evaluation.reusability.sparse_cuts import (
        SparseCut,
        SparseSettings,
        read_results,
        run_case,
        write_results,
    )
    from bridge.evaluation.reusability.sparse_tables import forecast_table, summarize, table, verdict_table

    full = load(args.dataset, args.data_dir)
    configs = dict(CONFIGS)
    for item in args.config or []:
        name, _, extra = item.partition("=")
        configs[name] = extra
    people = {f"people{n}": n for n in args.people}
    configs.update(dict.fromkeys(people, args.people_args))
    chosen = [*(args.configs or ([] if people else ["default", "open"])), *people]
    out = args.out / args.dataset.replace("@", "-at")
    path = out / "results.json"
    results = {(r.config, r.cut.name): r for r in (read_results(path) if path.exists() and not args.restart else [])}
    print(f"cpu: {cpu_model()}; dataset {full.name}; configs {', '.join(chosen)}", flush=True)
    for name in chosen:
        for keep in args.keep:
            for seed in args.seeds:
                cut = SparseCut(keep, seed)
                if (name, cut.name) in results and not args.rerun:
                    continue
                root = out / name / cut.name
                ws = Workspace(args.data_dir, args.workspace / "runs", root / "qrels", root / "reports",
                               args.workspace / "cache")  # fmt: skip
                start = time.perf_counter()
                extra = shlex.split(configs[name])
                label = (lambda ws, ds: None) if args.estimate_only else labeller(full.name, extra, args.restart)
                n = people.get(name, 0)
                more = tuple(m - n for m in args.people if m > n) if name in people and n == min(args.people) else ()
                settings = SparseSettings(draws=args.draws, forecast=more)
                result = run_case(ws, full, cut, name, label, settings, n)
                before = results.get((name, cut.name))
                if before is not None:  # the labels resumed: the case's cost is what every run of it spent
                    result = replace(result, label_seconds=before.label_seconds + result.label_seconds,
                                     llm_calls=before.llm_calls + result.llm_calls)  # fmt: skip
                results[(name, cut.name)] = result
                write_results(path, list(results.values()))
                print(f"{name} {cut.name}: {result.holes} holes ({result.relevant_holes} relevant, "
                      f"{result.expected_relevant:.0f} expected), label {result.label_seconds:.0f} s, "
                      f"{time.perf_counter() - start:.0f} s in all", flush=True)  # fmt: skip
    kept = [r for r in results.values() if r.config in chosen and r.cut.keep in args.keep and r.cut.seed in args.seeds]
    for keep in args.keep:
        print(f"\n{full.name}, keep {keep} relevant per topic, seeds {' '.join(map(str, args.seeds))}")
        print(table(summarize([r for r in kept if r.cut.keep == keep])))
        print(verdict_table([r for r in kept if r.cut.keep == keep]))
        print(forecast_table([r for r in kept if r.cut.keep == keep]))
    if args.record:
        record_figures(args.record, args.dataset, kept, args.record_config, args.record_fit)
    if args.term_priors:
        record_term_priors(
            args.term_priors,
            full,
            [(r.cut, out / r.config / r.cut.name) for r in kept if r.people],
            Workspace(args.data_dir, args.workspace / "runs", cache_dir=args.workspace / "cache"),
        )
    if args.shape_oracle:
        shape_oracle(full, [(r.cut, out / r.config / r.cut.name) for r in kept if r.people],
                     Workspace(args.data_dir, args.workspace / "runs", cache_dir=args.workspace / "cache"))  # fmt: skip
    print(f"\n-> {path}")
    return 0


def record_term_priors(path: Path, full: Any, cases: list[tuple[Any, Path]], shared: Any) -> None:
    """The recalibration terms' priors (:data:`bridge.estimate.level.TERMS`) measured on these cases and kept in an
    exemplar fit file: per case, each term's coefficient by maximum likelihood over every open exemplar hole with its
    hidden label (the case's answers teaching the judge; the level and the slopes' scale free). The prior's mean is
    the mean over the cases, its sd the larger of their sd and the default prior's: another collection differs from
    this one by more than this one's cuts differ from each other."""
    from bridge.core.fsio import write_json_atomic
    from bridge.core.label_records import HUMAN_JUDGE
    from bridge.core.layout import Workspace
    from bridge.estimate.calibration import PairFacts
    from bridge.estimate.hole_evidence import recorded_terms
    from bridge.estimate.level import TERMS, recalibrated, term_estimates
    from bridge.evaluation.rebenchmark.inputs import load_inputs
    from bridge.evaluation.reusability.sparse_cuts import hidden_label, sparse_dataset
    from bridge.judging.learned.exemplar import NAME, STAGE

    if not cases:
        raise SystemExit("--term-priors measures on cases with people's answers: give --people N (N > 0)")
    values: dict[str, list[float]] = {}
    for cut, root in cases:
        sparse = sparse_dataset(full, cut)
        inputs = load_inputs(Workspace(shared.data_dir, shared.runs_dir, root / "qrels", root / "reports",
                                       shared.cache_dir), sparse)  # fmt: skip
        holes = [r for r in inputs.counted_labels if r.judge != HUMAN_JUDGE and r.stage == STAGE]
        facts = [PairFacts.of(r) for r in holes]
        calibration = recalibrated(inputs.calibrations[NAME], recorded_terms(facts))
        y = [hidden_label(full, (r.qid, r.docid)) for r in holes]
        measured = term_estimates(calibration, calibration.rows(facts), y)
        for term, value in measured.items():
            values.setdefault(term, []).append(value)
        print(f"{cut.name} on {len(holes)} holes: " + ", ".join(f"{k} {v:+.2f}" for k, v in measured.items()))
    data = json.loads(path.read_text(encoding="utf-8"))
    priors = data["calibration"].setdefault("term_priors", {})
    for term, vs in values.items():
        spread = statistics.stdev(vs) if len(vs) > 1 else 0.0
        priors[term] = [round(statistics.mean(vs), 2), round(max(spread, TERMS[term].sd), 2)]
    data["provenance"]["term_priors"] = (
        f"each recalibration term's coefficient by maximum likelihood on {len(cases)} cuts of {full.name} whose "
        "people's answers taught the judge (python -m bench sparse --people N --term-priors): the mean over the cuts, "
        "the sd the larger of theirs and the default prior's"
    )
    write_json_atomic(path, data)
    shown = ", ".join(f"{k} N({m}, {sd})" for k, (m, sd) in priors.items())
    print(f"term priors over {len(cases)} cases of {full.name}: {shown}\n-> {path}")


def shape_oracle(full: Any, cases: list[tuple[Any, Path]], shared: Any) -> None:
    """How far the judge's ranking of the holes can carry P@10's order, whatever measures the level: per case, the
    Kendall tau and mean |error| of P@10 (each hole counted at its P) with the estimate's central P, with that P's
    logit shifted so that its sum is the true number of relevant holes (the level known), shifted per topic so that
    each topic's sum is its true number (every topic's level known: only the judge's order within a topic left), and
    with one P for every hole (the holey score's order)."""
    import numpy as np
    from scipy.optimize import brentq
    from scipy.special import expit, logit

    from bridge.core.layout import Workspace
    from bridge.core.trec import top_k
    from bridge.estimate.hole_evidence import build_hole_model
    from bridge.evaluation.rebenchmark.estimated import hole_evidence
    from bridge.evaluation.rebenchmark.inputs import load_inputs
    from bridge.evaluation.reusability.sparse_cuts import _runs, hidden_label, sparse_dataset
    from bridge.evaluation.scoring.rankcorr import kendall_tau

    def matched(z: np.ndarray, total: float) -> np.ndarray:
        """expit(z + c) with c such that the sum is ``total`` (0 or all: the P at that end)."""
        if total <= 0 or total >= len(z):
            return np.full(len(z), float(total > 0))
        return expit(z + brentq(lambda c: expit(z + c).sum() - total, -60.0, 60.0))

    rows: dict[str, list[tuple[float, float]]] = {}
    for cut, root in cases:
        sparse = sparse_dataset(full, cut)
        ws = Workspace(shared.data_dir, shared.runs_dir, root / "qrels", root / "reports", shared.cache_dir)
        runs, inputs = _runs(ws, sparse), load_inputs(ws, sparse)
        model = build_hole_model(hole_evidence(inputs, sparse.qrels, 10))
        central = model.draw_p(np.random.default_rng(0), 200, central=True).mean(axis=0)
        truth = np.array([hidden_label(full, pair) for pair in model.pairs], dtype=float)
        z = logit(np.clip(central, 1e-9, 1 - 1e-9))
        topic = np.array([q for q, _ in model.pairs])
        per_topic = np.zeros(len(z))
        for q in set(topic):
            per_topic[topic == q] = matched(z[topic == q], truth[topic == q].sum())
        variants = {"estimate's P": central, "level known": matched(z, truth.sum()),
                    "each topic's level known": per_topic, "one P for every open hole": np.full(len(z), truth.mean()),
                    "truth": truth}  # fmt: skip
        scores: dict[str, list[float]] = {name: [] for name in variants}
        for s in sorted(runs):  # each top 10 read once: its open holes (rows of P) and its fixed relevant count
            shown = [(q, d) for q in inputs.topics for d in top_k(runs[s].get(q, {}), 10)]
            holes = [model.index[pair] for pair in shown if pair in model.index]
            known = [model.fixed.get(q, {}).get(d, 0) for q, d in shown if (q, d) not in model.index]
            fixed = sum(grade >= model.threshold for grade in known)
            for name, p in variants.items():
                scores[name].append((fixed + float(p[holes].sum())) / 10 / len(inputs.topics))
        f = np.array(scores.pop("truth"))
        said = []
        for name, values in scores.items():
            v = np.array(values)
            rows.setdefault(name, []).append((kendall_tau(list(v), list(f)), float(np.abs(v - f).mean())))
            said.append(f"{name} tau {rows[name][-1][0]:.3f}")
        print(f"{cut.name}: " + "; ".join(said), flush=True)
    print("\n| P@10 with | cases | Kendall tau | mean abs. error |\n|---|---|---|---|")
    for name, values in rows.items():
        taus, errors = [t for t, _ in values], [e for _, e in values]
        print(
            f"| {name} | {len(values)} | {statistics.mean(taus):.3f} [{min(taus):.3f}, {max(taus):.3f}] | "
            f"{statistics.mean(errors):.3f} |"
        )


def record_figures(path: Path, dataset: str, results: list[CaseResult], config: str, fit: str) -> None:
    """Keep the benchmark's figures for ``config`` in an exemplar fit file (``quality.benchmark``: what the report's
    trust section quotes), replacing earlier ones of the same dataset, cut size and fit."""
    import numpy as np

    from bridge.core.fsio import write_json_atomic
    from bridge.evaluation.reusability.sparse_tables import case_figures

    data = json.loads(path.read_text(encoding="utf-8"))
    keeps = {r.cut.keep for r in results if r.config == config}
    kept = [m for m in data["calibration"]["quality"].get("benchmark", []) if not (m["dataset"] == dataset
            and m["fit"] == fit and m["keep"] in keeps)]  # fmt: skip
    for keep in sorted({r.cut.keep for r in results}):
        cases = [r for r in results if r.config == config and r.cut.keep == keep]
        for measure in ("nDCG@10", "P@10"):
            f = [case_figures(r, measure) for r in cases]
            if not f:
                continue
            kept.append({
                "dataset": dataset, "keep": keep, "fit": fit, "measure": measure, "cases": len(f),
                "tau": round(float(np.mean([x["tau_estimate"] for x in f])), 3),
                "tau_holey": round(float(np.mean([x["tau_holey"] for x in f])), 3),
                "error": round(float(np.mean([x["error_estimate"] for x in f])), 4),
                "error_holey": round(float(np.mean([x["error_holey"] for x in f])), 4),
                "covered": int(sum(x["covered"] for x in f)), "systems": int(sum(x["systems"] for x in f)),
                "width": round(float(np.mean([x["width"] for x in f])), 3),
            })  # fmt: skip
    data["calibration"]["quality"]["benchmark"] = kept
    write_json_atomic(path, data)


def run_fit(args: argparse.Namespace) -> int:
    from bridge.core.fsio import write_json_atomic
    from bridge.core.layout import Workspace
    from bridge.core.stamp import run_families
    from bridge.encoders.embeddings import PassageEmbeddings
    from bridge.encoders.sources import MINILM
    from bridge.evaluation.reusability.sparse_cuts import SparseCut, hole_sample
    from bridge.judging.fitting.metrics import weighted_measures
    from bridge.judging.learned.exemplar import ExemplarFeatures, ExemplarFit
    from bridge.judging.learned.exemplar_fitting import common_shift, family_spread, fit_exemplar

    def samples(name: str) -> list[dict]:
        ds = load(name, args.data_dir)
        ws = Workspace(args.data_dir, args.workspace / "runs", cache_dir=args.workspace / "cache")
        from bridge.core.trec import read_runs

        runs = read_runs(ws.runs(ds.slug))
        if not runs:
            raise SystemExit(f"no runs in {ws.runs(ds.slug)}: bridge retrieve --dataset {name} --pool-config grid")
        encoder = PassageEmbeddings(ds, ws.cache_dir, MINILM)
        families = run_families(ws.runs(ds.slug))
        rows = []
        for keep in args.keep:
            for seed in args.seeds:
                cut = SparseCut(keep, seed)
                rows += hole_sample(ds, cut, runs, lambda s: ExemplarFeatures(s, encoder), 10, families)
        return rows

    print(f"cpu: {cpu_model()}", flush=True)
    rows = samples(args.dataset)
    if args.family_sd:  # the shift of each set of retrieval families, measured on these cuts, into a fit's file
        data = json.loads(args.family_sd.read_text(encoding="utf-8"))
        fit = ExemplarFit.read(args.family_sd)
        data["calibration"]["family_sd"] = round(family_spread(fit.calibration, rows), 3)
        write_json_atomic(args.family_sd, data)
        sd = data["calibration"]["family_sd"]
        print(f"family sd {sd} on {len(rows):,} holes of {args.dataset}\n-> {args.family_sd}")
        return 0
    cuts = f"{' or '.join(map(str, args.keep))} (seeds {' '.join(map(str, args.seeds))})"
    provenance: dict[str, Any] = {"collection": args.dataset, "cuts": cuts, "features": list(FEATURES),
                                  "pool": "runs/<ds>/ (the 40-system grid), depth 10", "cpu": cpu_model()}  # fmt: skip
    first = fit_exemplar(rows, FEATURES, MINILM, 0.0, provenance, measure=False)
    shifts: dict[str, float] = {}
    quality: dict[str, Any] = {}
    for other in args.transfer_from:
        other_rows = samples(other)
        back = fit_exemplar(other_rows, FEATURES, MINILM, 0.0, {"collection": other, "cuts": cuts}, measure=False)
        shifts[f"{args.dataset} fit on {other}"] = common_shift(first.calibration, other_rows)
        shifts[f"{other} fit on {args.dataset}"] = common_shift(back.calibration, rows)
        p = first.calibration.mean(first.calibration.rows(_facts(other_rows)))
        y = [r["relevant"] for r in other_rows]
        m = weighted_measures(p, y, [1.0] * len(y), 0.5)
        quality[other] = {"holes": len(y), "relevant": int(sum(y)), "mean_p": round(float(p.mean()), 4),
                          "auc": m["auc"]}  # fmt: skip
    transfer = max([abs(v) for v in shifts.values()] + [args.min_transfer_sd])
    provenance.update({"transfer_shifts": shifts, "transfer_quality": quality, "holes": len(rows),
                       "relevant": int(sum(r["relevant"] for r in rows))})  # fmt: skip
    fit = fit_exemplar(rows, FEATURES, MINILM, round(transfer, 3), provenance)
    write_json_atomic(args.fit, fit.to_json())
    c = fit.calibration
    print(f"exemplar fit on {len(rows):,} holes of {args.dataset} ({cuts}): coefficients "
          f"{c.draws.mean(axis=0).round(3)} over {c.features}; topic sd {c.topic_sd}; transfer sd {c.transfer_sd} "
          f"(shifts {shifts}); elsewhere {quality}\n-> {args.fit}")  # fmt: skip
    return 0


def run_fit_llm(args: argparse.Namespace) -> int:
    """The calibration of ``--refine exemplar-llm``: the LLM compares a random sample of the training cuts' holes
    with their nearest known relevant passage, and the free features and that comparison are fitted together; the
    shifts (per topic, between collections) are the free fit's, which measured them on every hole."""
    import random

    from bridge.core.fsio import write_json_atomic
    from bridge.core.layout import Workspace
    from bridge.core.trec import read_runs
    from bridge.encoders.embeddings import PassageEmbeddings
    from bridge.evaluation.reusability.sparse_cuts import SparseCut, hole_sample, pool_of, sparse_dataset
    from bridge.judging import cases_for
    from bridge.judging.learned.exemplar import ExemplarFeatures, ExemplarFit, shipped_fit_path
    from bridge.judging.learned.exemplar_fitting import fit_exemplar
    from bridge.judging.llm.comparer import FEATURE, Comparer
    from bridge.llm import LLMConfig, open_llm
    from bridge.pool.pooling import PoolEntry

    free = ExemplarFit.read(args.free_fit or shipped_fit_path())
    full = load(args.dataset, args.data_dir)
    ws = Workspace(args.data_dir, args.workspace / "runs", cache_dir=args.workspace / "cache")
    runs = read_runs(ws.runs(full.slug))
    encoder = PassageEmbeddings(full, ws.cache_dir, free.encoder)
    llm = open_llm(LLMConfig(model=args.model, cache_dir=ws.cache_dir), ws.llm_cache, progress=True)
    comparer = Comparer(llm)
    print(f"cpu: {cpu_model()}; {args.sample} holes per cut read by {llm.model_id}", flush=True)
    rows: list[dict] = []
    start = time.perf_counter()
    for keep in args.keep:
        for seed in args.seeds:
            cut = SparseCut(keep, seed)
            sparse = sparse_dataset(full, cut)
            features = ExemplarFeatures(sparse, encoder)
            features.set_pool([(e.qid, e.docid) for e in pool_of(sparse, runs, 10)])
            holes = hole_sample(full, cut, runs, lambda s, f=features: f, 10)
            picked = random.Random(f"llm-{cut.name}").sample(holes, min(args.sample, len(holes)))
            cases = cases_for(sparse, [PoolEntry(r["qid"], r["docid"], (), 1) for r in picked])
            shown = [features.nearest(c) for c in cases]
            texts = [full.corpus.get(d).contents() for d in shown]  # type: ignore[union-attr]
            for row, value in zip(picked, comparer.logits(cases, texts, progress=True), strict=True):
                if value == value:
                    rows.append({**row, FEATURE: float(value)})
    seconds = time.perf_counter() - start
    c = free.calibration
    provenance = {
        **free.provenance, "llm": llm.model_id, "comparer": comparer.comparer_id, "sample": len(rows),
        "seconds": round(seconds, 1), "shifts": "the free fit's (measured on every hole of the cuts)",
    }  # fmt: skip
    fit = fit_exemplar(rows, [*free.features, FEATURE], free.encoder, c.transfer_sd or 0.0, provenance)
    fit = ExemplarFit(replace(fit.calibration, topic_sd=c.topic_sd), fit.encoder, fit.provenance)
    write_json_atomic(args.fit_llm, fit.to_json())
    beta = fit.calibration.draws.mean(axis=0).round(3)
    print(f"exemplar-llm fit on {len(rows)} holes ({seconds:.0f} s of LLM reading): {beta} over "
          f"{fit.calibration.features}\n-> {args.fit_llm}")  # fmt: skip
    return 0


def _facts(rows: list[dict]) -> list:
    from bridge.estimate.calibration import PairFacts

    return [PairFacts(extra={f: float(r[f]) for f in FEATURES}) for r in rows]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench sparse", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--dataset", default="dl19", help="NAME or NAME@T: T the relevance threshold (nfcorpus@2)")
    parser.add_argument("--data-dir", type=Path, default=Path(DEFAULT_DATA_DIR))
    parser.add_argument("--workspace", type=Path, default=Path("."), help="folder with runs/ and cache/ (default: .)")
    parser.add_argument("--out", type=Path, default=Path("reports/sparse"), help="cases' folders and results.json")
    parser.add_argument("--keep", type=int, nargs="+", default=[1, 2], help="relevant passages kept per topic")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--config", action="append", metavar="NAME=ARGS", help="another label configuration")
    parser.add_argument("--configs", nargs="+", help=f"configurations (default: default open; of {', '.join(CONFIGS)})")
    parser.add_argument(
        "--people",
        type=int,
        nargs="+",
        default=[],
        metavar="N",
        help="a config peopleN per N: the default's labels, then N random holes exported by `bridge review export "
        "--random N --csv`, answered from the hidden labels, imported and merged",
    )
    parser.add_argument("--people-args", default="", metavar="ARGS",
                        help="`bridge label` arguments of the peopleN configs (e.g. another collection's "
                        "--exemplar-fit, for figures out of sample)")  # fmt: skip
    parser.add_argument("--draws", type=int, default=400)
    parser.add_argument("--rerun", action="store_true", help="run cases already in results.json again")
    parser.add_argument(
        "--estimate-only",
        action="store_true",
        help="estimate again from the labels the cases hold, without running label (with --rerun)",
    )
    parser.add_argument("--restart", action="store_true", help="label every case afresh")
    parser.add_argument("--fit", type=Path, help="fit the exemplar calibration on the cuts and write it here")
    parser.add_argument("--transfer-from", nargs="*", default=[], help="collections that measure the transfer shift")
    parser.add_argument("--family-sd", type=Path, metavar="FIT",
                        help="measure the spread of each retrieval family's shift on the dataset's cuts and write "
                        "it into this exemplar fit file (its calibration's family_sd)")  # fmt: skip
    parser.add_argument("--term-priors", type=Path, metavar="FIT",
                        help="with --people N: measure each recalibration term's coefficient on the cases and write "
                        "their priors into this exemplar fit file (in-sample: the fit's own collection)")  # fmt: skip
    parser.add_argument("--shape-oracle", action="store_true",
                        help="with --people N: P@10's tau and error with the level known, overall and per topic (how "
                        "far the judge's ranking of the holes carries, whatever measures the level)")  # fmt: skip
    parser.add_argument("--min-transfer-sd", type=float, default=0.5)
    parser.add_argument("--record", type=Path, help="keep the figures of --record-config in this exemplar fit file")
    parser.add_argument("--record-config", default="default")
    parser.add_argument("--record-fit", default="in-sample", help="how the fit relates to the dataset (in-sample, ...)")
    parser.add_argument("--fit-llm", type=Path, help="fit --refine exemplar-llm's calibration and write it here")
    parser.add_argument("--sample", type=int, default=100, help="--fit-llm: holes the LLM reads per cut")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b", help="--fit-llm: the LLM (embedded llama.cpp)")
    parser.add_argument("--free-fit", type=Path, help="--fit-llm: the free exemplar fit (default: the shipped one)")
    args = parser.parse_args(argv)
    if any(n < 0 for n in args.people):
        parser.error("--people: numbers of random holes are 0 or more")
    if args.fit_llm:
        return run_fit_llm(args)
    return run_fit(args) if args.fit or args.family_sd else run_benchmark(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
