"""Stage stamps: a stage is up to date only while its settings, inputs and outputs are byte for byte the same."""

from __future__ import annotations

import argparse

from bridge.core.shared_options_cli import args_settings
from bridge.core.stamp import StageStamp, family_of_each, stage_stamp


def stamp_over(tmp_path, **settings) -> StageStamp:
    return StageStamp(tmp_path / "out" / ".stage.stamp.json", settings, (tmp_path / "in", tmp_path / "out"))


def test_a_stamp_holds_until_a_setting_an_input_or_an_output_changes(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "in" / "a.run").write_text("q1 Q0 d1 1 2.0 x\n")
    (tmp_path / "out" / "result.csv").write_text("1\n")
    stamp = stamp_over(tmp_path, depth=10)
    assert stamp.up_to_date() is None  # never finished
    stamp.write("pooled 1 run")
    assert stamp.up_to_date() == "pooled 1 run"
    assert stamp_over(tmp_path, depth=20).up_to_date() is None  # another setting
    (tmp_path / "in" / "a.run").write_text("q1 Q0 d1 1 2.5 x\n")  # same size, another byte
    assert stamp.up_to_date() is None
    stamp.write("again")
    (tmp_path / "in" / "b.run").write_text("")  # a new input file, even empty
    assert stamp.up_to_date() is None
    stamp.write("again")
    (tmp_path / "out" / "result.csv").unlink()  # an output removed
    assert stamp.up_to_date() is None
    stamp.write("again")
    (tmp_path / "out" / ".other.stamp.json").write_text("{}")  # another stage's stamp is not an input
    assert stamp.up_to_date() == "again"


def test_a_torn_or_foreign_stamp_is_not_up_to_date(tmp_path):
    (tmp_path / "out").mkdir()
    stamp = stamp_over(tmp_path)
    stamp.path.write_text('{"digest": ')
    assert stamp.up_to_date() is None
    stamp.path.write_text("[1, 2]")
    assert stamp.up_to_date() is None


def test_verbosity_and_the_force_switch_are_not_settings(tmp_path):
    loud = argparse.Namespace(dataset="nq", depth=10, quiet=False, force=False)
    quiet = argparse.Namespace(dataset="nq", depth=10, quiet=True, force=True)
    assert args_settings(loud) == args_settings(quiet) == {"dataset": "nq", "depth": 10}
    a = stage_stamp(tmp_path, "pool", args_settings(loud), [tmp_path])
    b = stage_stamp(tmp_path, "pool", args_settings(quiet), [tmp_path])
    assert a.path == tmp_path / ".pool.stamp.json" and a.digest() == b.digest()


def test_the_files_a_stage_wrote_are_recorded_and_covered(tmp_path):
    """An output outside ``paths`` (eval's report files beside other commands' files) counts once recorded."""
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    report = tmp_path / "out" / "report.md"
    report.write_text("# report\n")
    stamp = StageStamp(tmp_path / "out" / ".eval.stamp.json", {}, (tmp_path / "in",))
    stamp.write("done", outputs=[report])
    (tmp_path / "out" / "other-command.json").write_text("{}")  # not the stage's: no effect
    assert stamp.up_to_date() == "done"
    report.write_text("# edited\n")
    assert stamp.up_to_date() is None


def test_a_system_no_stamp_names_is_a_family_of_its_own():
    assert family_of_each(["a", "b", "c"], {"a": "bm25", "b": "bm25", "z": "dense"}) == {
        "a": "bm25",
        "b": "bm25",
        "c": "c",
    }
    assert family_of_each(["a"], None) == {"a": "a"}
