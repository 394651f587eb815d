"""Kinds of holes: which population a pool pair belongs to, read from the topic and the passage's origin.

A judge's quality, and even the sign of a feature, can differ between kinds of holes, and an overall figure hides
it (DESIGN.md §12). On nq the corpus holds the passages a retriever found for the first 441 questions and only
gold passages for the rest: an answer-bearing hole of a topic with such a list is an on-topic passage, one of any
other topic is mostly another question's passage that holds the string. So the kind of a hole comes from the
dataset, not only from the systems that pooled it:

* ``topic_listed``   the topic has a candidate list of its own in the dataset (:attr:`Dataset.candidate_lists`);
* ``passage_listed`` the passage is on some topic's candidate list (a retrieved passage, not only a gold one).

Both are facts a hole calibration may pick as strata, and whose products with a judge's features give a kind its
own slopes (:mod:`bridge.judging.fitting.hole_calibration`). The **kind** of a pair, the unit a reference is sampled in
and every quality figure is reported per, is its topic's: ``listed topic`` or ``other topic`` where the dataset has
candidate lists, ``all`` where it has none.
"""

from __future__ import annotations

from collections.abc import Mapping

from bridge.datasets.core import Dataset

TOPIC_LISTED = "topic_listed"
PASSAGE_LISTED = "passage_listed"
FACTS = (TOPIC_LISTED, PASSAGE_LISTED)
LISTED_TOPIC, OTHER_TOPIC, ALL = "listed topic", "other topic", "all"


def kind_facts(dataset: Dataset, qid: str, docid: str) -> dict[str, float]:
    """:data:`FACTS` of one pair; none on a dataset whose topics are all of one kind."""
    if not has_kinds(dataset):
        return {}
    whole = dataset.whole()
    return {TOPIC_LISTED: float(qid in whole.candidate_lists), PASSAGE_LISTED: float(docid in whole.listed_passages)}


def has_kinds(dataset: Dataset) -> bool:
    """Whether the dataset's topics fall into more than one kind."""
    whole = dataset.whole()
    return bool(whole.candidate_lists) and len(whole.candidate_lists) < len(whole.queries)


def kind_of(facts: Mapping[str, float]) -> str:
    """The kind named by a pair's facts (:data:`ALL` where no fact says anything)."""
    if not facts or TOPIC_LISTED not in facts:
        return ALL
    return LISTED_TOPIC if facts[TOPIC_LISTED] else OTHER_TOPIC


def pair_kind(dataset: Dataset, qid: str, docid: str = "") -> str:
    """The kind of a pair on ``dataset`` (a topic's holes are all of its kind)."""
    return kind_of(kind_facts(dataset, qid, docid))
