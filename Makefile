# bridge: `make pool label eval DATASET=nq` is the main job; `make test` runs the test suite.
# Both build the environment (.venv) first when it is missing; later runs reuse it.

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
BRIDGE := $(PY) -m bridge
STAMP := $(VENV)/.bridge-installed

DATASET ?= nq
DATA_DIR ?= ../shared/data
LIMIT ?=
DEPTH ?= 10
# The pool file retrieve runs (bridge/retrievers/pools/): the 10-system default; on a LIMIT slice the quick pool, which
# encodes no whole corpus (a slice keeps the whole corpus). POOL=default runs the 10 systems on a slice too.
POOL ?= $(if $(LIMIT),quick,default)
SYSTEMS ?=
BACKEND ?= llamacpp-batched
MODEL ?= smollm2-135m
# nq's answer-bearing pairs: answer-lexical, calibrated on the maintainers' reading of 460 answer-bearing holes drawn at
# random within each kind of hole (design weights; bench/data/nq-answer-reference)
# (strata chosen by cross-validation, bootstrap draws; bench/RESULTS.md), gives every one of them a P without a call.
# The costly judge, answer-reader (Qwen2.5-Coder-1.5B's likelihood of the answers with and without the passage, with
# the lexical features, calibrated on the same reference), then re-reads pairs in value order for LABEL_MINUTES of
# pool judging (nq: 2; its fit on the reference is a fixed cost, shipped in the reference's fits/ folder and kept
# beside the labels; a re-run with the budget spent asks nothing; raise LABEL_MINUTES to go on, LABEL_MINUTES=0: none).
REFERENCE_nq := bench/data/nq-answer-reference/labels-first.tsv
ANSWER_JUDGE_nq := answer-lexical
REFINE_nq := answer-reader
LABEL_MINUTES_nq := 2
REFERENCE ?= $(REFERENCE_$(DATASET))
# A reading of random pool holes (scifact: the maintainers' reading of 80, 2 relevant) written as people's random
# answers: it fixes the holes read and measures the exemplar judge's level on the others (its fit is dl19's).
HOLE_REFERENCE_scifact := bench/data/scifact-hole-reference/labels-first.tsv
HOLE_REFERENCE ?= $(HOLE_REFERENCE_$(DATASET))
# The costly judge's model on every dataset: Qwen2.5-Coder-1.5B, the fallback judge measured above chance where
# SmolLM2-135M is not (bridge/data/judge-quality.tsv; docs/label.md). With a zero budget it is named, not loaded.
LABEL_MODEL ?= qwen2.5-coder-1.5b
ANSWER_JUDGE ?= $(ANSWER_JUDGE_$(DATASET))
# Every dataset's main job is bounded: LABEL_MINUTES of pool judging by the costly judge, 0 unless the dataset sets it
# (bridge/data/judge-quality.tsv has what each judge measured): SmolLM2's cascade is at chance on dl19, nfcorpus and
# scifact; Qwen's is above chance on dl19 and scifact but its calibration and audit (about 160 calls, fixed costs) do
# not fit a bounded job; beir:/irds: folders have no measured judge. With 0 the free stages decide what they can,
# every other hole keeps the estimate's prior P, and the label stage's first lines say so. A LIMIT slice is a quick
# look: no costly judge unless LABEL_MINUTES says so (nq: answer-lexical's calibrated P covers every answer-bearing
# pair).
LABEL_MINUTES ?= $(if $(LIMIT),0,$(or $(LABEL_MINUTES_$(DATASET)),0))
REFINE ?= $(if $(filter-out 0,$(LABEL_MINUTES)),$(REFINE_$(DATASET)))
LABEL_ARGS ?=
REVIEW_ARGS ?=
RETRIEVE_ARGS ?=
EVAL_ARGS ?=
REUSABILITY_ARGS ?=
BASELINE ?= ci/$(DATASET)-leaderboard.csv
TOLERANCE ?= 0
CHECK_ARGS ?=
PYTEST_ARGS ?=

COMMON = --dataset $(DATASET) --data-dir $(DATA_DIR) $(if $(LIMIT),--limit $(LIMIT))

.PHONY: install install-qwen test test-all lint retrieve pool label review eval score eval-check reusability rag doctor bench clean

install: $(STAMP)

$(STAMP): pyproject.toml scripts/install.sh
	VENV=$(VENV) PYTHON=$(PYTHON) bash scripts/install.sh
	touch $@

install-qwen: install  # kept for old instructions: make install installs Qwen now

retrieve: install
	$(BRIDGE) retrieve $(COMMON) --pool-config $(POOL) $(if $(SYSTEMS),--systems $(SYSTEMS)) --backend $(BACKEND) --model $(MODEL) $(RETRIEVE_ARGS)

pool: retrieve
	$(BRIDGE) pool $(COMMON) --depth $(DEPTH)

label: install
	$(BRIDGE) label $(COMMON) --backend $(BACKEND) --model $(LABEL_MODEL) $(if $(REFERENCE),--reference $(REFERENCE)) $(if $(LABEL_MINUTES),--max-minutes $(LABEL_MINUTES)) $(if $(ANSWER_JUDGE),--answer-judge $(ANSWER_JUDGE)) $(if $(REFINE),--refine $(REFINE)) $(if $(HOLE_REFERENCE),--hole-reference $(HOLE_REFERENCE)) $(LABEL_ARGS)

# Human review of escalated pairs: serves the review page on 127.0.0.1 (prints the URL).
# Create annotators first: $(PY) -m bridge review add-annotator NAME --dataset $(DATASET)
review: install
	$(BRIDGE) review serve $(COMMON) $(REVIEW_ARGS)

eval: install
	$(BRIDGE) eval $(COMMON) $(EVAL_ARGS)

# New run files (RUNS="new/a.run [NAME=]FILE ...") placed in the filled leaderboard of a finished main job: their new
# pairs decided with label's judge options (free stages; a costly judge with SCORE_ARGS="--max-minutes M"), every run
# estimated together -> reports/<ds>/score/leaderboard.csv, for `make eval-check` (docs/ci.md).
score: install
	$(if $(RUNS),,$(error RUNS is empty: make score RUNS="path/to/new.run" DATASET=$(DATASET)))
	$(BRIDGE) score $(RUNS) $(COMMON) --backend $(BACKEND) --model $(LABEL_MODEL) $(if $(REFERENCE),--reference $(REFERENCE)) $(if $(ANSWER_JUDGE),--answer-judge $(ANSWER_JUDGE)) $(SCORE_ARGS)

# Leave-one-system-out test against human qrels (e.g. DATASET=dl19); judge options via LABEL_ARGS.
reusability: install
	$(BRIDGE) reusability $(COMMON) --pool-config $(POOL) --backend $(BACKEND) --model $(MODEL) $(LABEL_ARGS) $(REUSABILITY_ARGS)

eval-check: install
	$(BRIDGE) eval check --dataset $(DATASET) --baseline $(BASELINE) --tolerance $(TOLERANCE) $(CHECK_ARGS)

rag: install
	$(BRIDGE) rag $(COMMON) --backend $(BACKEND) --model $(MODEL)

doctor: install
	$(BRIDGE) doctor --data-dir $(DATA_DIR)

# The fast suite (the real-model tests, marked slow, left out): a few minutes on 2 cores. test-all: every test, what CI
# runs (.ci/run). Per-module times: bench/RESULTS.md, "The test suite's time".
test: install
	$(PY) -m pytest -m "not slow" $(PYTEST_ARGS)

test-all: install
	$(PY) -m pytest $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check bridge tests bench scripts

bench: install
	$(PY) -m bench $(BENCH_ARGS)

clean:
	rm -rf runs/*/ qrels/*/ reports/ .pytest_cache
