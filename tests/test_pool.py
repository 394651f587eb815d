import pytest

from bridge.core.errors import BridgeError, InputError
from bridge.pool.pooling import PoolEntry, build_pool, check_run_queries, read_pool, write_pool

RUNS = {
    "bm25": {"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"x": 1.0}},
    "dense": {"q1": {"c": 0.9, "d": 0.8, "a": 0.1}},
}
QRELS = {"q1": {"a": 1, "b": 0}, "q2": {}}


def test_pool_excludes_pairs_judged_with_any_grade():
    pool = build_pool(RUNS, QRELS, ["q1", "q2"], depth=10)
    pairs = {(e.qid, e.docid) for e in pool}
    assert pairs == {("q1", "c"), ("q1", "d"), ("q2", "x")}  # a (rel 1) and b (rel 0) are judged


def test_pool_records_systems_and_best_rank():
    pool = {(e.qid, e.docid): e for e in build_pool(RUNS, QRELS, ["q1", "q2"], depth=10)}
    assert pool[("q1", "c")] == PoolEntry("q1", "c", ("bm25", "dense"), 1)  # rank 3 in bm25, 1 in dense
    assert pool[("q1", "d")].systems == ("dense",) and pool[("q1", "d")].min_rank == 2


def test_pool_depth_cuts_each_run():
    pool = build_pool(RUNS, QRELS, ["q1"], depth=1)
    assert [(e.docid, e.systems) for e in pool] == [("c", ("dense",))]


def test_pool_only_covers_requested_queries():
    assert {e.qid for e in build_pool(RUNS, QRELS, ["q2"], depth=10)} == {"q2"}


def test_pool_file_round_trip_and_errors(tmp_path):
    pool = build_pool(RUNS, QRELS, ["q1", "q2"], depth=10)
    path = tmp_path / "pool.tsv"
    write_pool(pool, path)
    assert path.read_text().splitlines()[0] == "qid\tdocid\tsystems\tmin_rank"
    assert read_pool(path) == pool
    path.write_text("qid\tdocid\tsystems\tmin_rank\nq1\tc\tbm25\tfirst\n")
    with pytest.raises(InputError, match="line 2"):
        read_pool(path)
    with pytest.raises(BridgeError, match="run `bridge pool` first"):
        read_pool(tmp_path / "missing.tsv")


def test_query_mismatch_is_reported():
    assert check_run_queries(RUNS, ["q1", "q2", "q3"]) == [
        "run 'bm25' has no results for 1 of 3 queries",
        "run 'dense' has no results for 2 of 3 queries",
    ]
