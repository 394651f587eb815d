import json

import pytest
from conftest import DATA_DIR, needs_shared_data

from bridge.core.errors import BridgeError, InputError, MissingDataError
from bridge.datasets import dataset_slug, load_beir, load_dataset, nq_gold_docid


def test_beir_folder_and_limit(tiny_beir):
    ds = load_dataset(f"beir:{tiny_beir}", DATA_DIR)
    assert ds.slug == "beir-tiny" and ds.qids == ["q1", "q2"] and len(ds.corpus) == 5
    assert ds.corpus.get("d1").contents().startswith("Nobel Prize in Physics\n")
    head = ds.head(1)
    assert head.qids == ["q1"] and head.qrels == {"q1": {"d1": 1}} and len(head.corpus) == 5


def test_missing_data_directory_names_the_path(tmp_path):
    with pytest.raises(MissingDataError) as info:
        load_dataset("nq", tmp_path / "nowhere")
    assert str(tmp_path / "nowhere") in str(info.value) and "data directory" in str(info.value)
    with pytest.raises(MissingDataError, match="nq_open_litm"):
        load_dataset("nq", tmp_path)


def test_unknown_dataset_lists_the_known_ones(tmp_path):
    with pytest.raises(BridgeError, match="known: nq, scifact"):
        load_dataset("msmarco", tmp_path)
    assert dataset_slug("beir:/x/y/fiqa#dev") == "beir-fiqa-dev"


def test_bad_corpus_line_is_reported(tiny_beir):
    with open(tiny_beir / "corpus.jsonl", "a") as handle:
        handle.write(json.dumps({"title": "no id"}) + "\n")
    with pytest.raises(InputError, match=r"corpus.jsonl, line 6, field '_id'"):
        load_beir(tiny_beir)


def test_limit_must_be_positive(tiny_beir):
    with pytest.raises(BridgeError):
        load_beir(tiny_beir).head(0)


@needs_shared_data()
def test_nq_is_built_from_gold_and_distractor_passages():
    ds = load_dataset("nq", DATA_DIR)
    assert len(ds.queries) == 2655 and ds.queries[0].answers == ("Wilhelm Conrad Röntgen",)
    assert len(ds.corpus) == 10903  # 2,600 distinct gold passages + 8,303 distinct DPR distractors
    gold = next(iter(ds.qrels["0"]))
    doc = ds.corpus.get(gold)
    assert gold == nq_gold_docid(doc.title, doc.text) and gold.startswith("nqgold-")
    assert ds.corpus.get("20769157").title == "Asian Americans in science and technology"  # a DPR id


@needs_shared_data()
def test_scifact_and_dl19_sizes():
    scifact = load_dataset("scifact", DATA_DIR)
    assert (len(scifact.queries), len(scifact.corpus), sum(map(len, scifact.qrels.values()))) == (300, 5183, 339)
    dl19 = load_dataset("dl19", DATA_DIR, limit=5)
    assert len(dl19.queries) == 5 and dl19.relevance_threshold == 2
    assert set(dl19.qrels) == set(dl19.qids)


def test_a_fresh_copy_of_the_data_keeps_its_fingerprint_and_a_changed_byte_does_not(tiny_beir, tmp_path):
    """Caches (indexes, encodings) are keyed by the dataset's fingerprint: by its files' contents, never their folder
    or mtimes, so a copy of the data elsewhere reuses them and an edited file misses them."""
    import os
    import shutil

    copy = tmp_path / "elsewhere" / "tiny"
    shutil.copytree(tiny_beir, copy)
    for path in copy.rglob("*"):
        os.utime(path, ns=(1, 1))  # new mtimes as well as a new folder
    original = load_dataset(f"beir:{tiny_beir}", tmp_path)
    assert load_dataset(f"beir:{copy}", tmp_path).fingerprint == original.fingerprint
    qrels = copy / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text().replace("\t1\n", "\t2\n", 1))
    assert load_dataset(f"beir:{copy}", tmp_path).fingerprint != original.fingerprint
