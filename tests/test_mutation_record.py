"""scripts/mutation.py: parsing mutmut's results, the score, and which records are stale."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("mutation", ROOT / "scripts" / "mutation.py")
mutation = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mutation)

RESULTS = """\
    lib.scale.x_seed__mutmut_1: killed
    lib.scale.x_seed__mutmut_2: survived
    lib.scale.xǁChapterScalesǁ__post_init____mutmut_3: timeout
    lib.scale.x_seeds__mutmut_4: survived
    lib.scales_other.x_f__mutmut_1: survived
    lib.nets.x_forward__mutmut_1: killed
"""


def test_parse_results_keeps_only_the_module_and_its_statuses():
    got = mutation.parse_results(RESULTS, "scale")
    assert got == {"lib.scale.x_seed__mutmut_1": "killed", "lib.scale.x_seed__mutmut_2": "survived",
                   "lib.scale.xǁChapterScalesǁ__post_init____mutmut_3": "timeout",
                   "lib.scale.x_seeds__mutmut_4": "survived"}


def test_parse_results_refuses_an_unknown_status():
    with pytest.raises(ValueError, match="unknown mutmut status 'exploded'"):
        mutation.parse_results("    lib.scale.x_f__mutmut_1: exploded\n", "scale")


def test_score_counts_timeouts_as_detected_and_leaves_equivalents_out():
    statuses = mutation.parse_results(RESULTS, "scale")
    equivalent = {"lib.scale.x_seed__mutmut_2": "same value", "lib.scale.x_seed__mutmut_1": "killed anyway"}
    s = mutation.summarise(statuses, equivalent)
    assert (s["mutants"], s["killed"], s["survived"], s["timeouts"]) == (4, 1, 2, 1)
    assert s["equivalent"] == {"lib.scale.x_seed__mutmut_2": "same value"}  # a killed one is not equivalent
    assert s["score"] == pytest.approx(2 / 3, abs=1e-4)  # rounded to 4 digits; (1 killed + 1 timeout) / (4 - 1 equivalent)


def test_an_unfinished_run_is_refused():
    with pytest.raises(ValueError, match="not checked"):
        mutation.summarise({"lib.scale.x_f__mutmut_1": "not checked"}, {})


def test_module_name_accepts_only_lib_modules():
    assert mutation.module_name("lib/scale.py") == "scale"
    for bad in ("lib/no_such_module.py", "tests/test_scale.py", "lib/scale"):
        with pytest.raises(ValueError, match="lib/<name>.py"):
            mutation.module_name(bad)


def test_stale_modules_reports_missing_changed_dirty_and_low_records():
    current = mutation.sha256(ROOT / "lib" / "scale.py")
    good = {"sha256": current, "git_commit": "a" * 40, "score": 0.95}
    assert mutation.stale_modules({"scale": good}, ["scale"]) == []
    assert "no mutation record" in mutation.stale_modules({}, ["scale"])[0]
    assert "stale" in mutation.stale_modules({"scale": good | {"sha256": "0" * 64}}, ["scale"])[0]
    assert "uncommitted" in mutation.stale_modules({"scale": good | {"git_commit": "a" * 40 + "-dirty"}}, ["scale"])[0]
    assert "below 90%" in mutation.stale_modules({"scale": good | {"score": 0.89}}, ["scale"])[0]
    assert mutation.stale_modules({}, ["not_landed_yet"]) == []


def test_judging_a_survivor_moves_it_and_rescores():
    record = {"scale": {"mutants": 10, "killed": 8, "timeouts": 0, "surviving": ["lib.scale.x_f__mutmut_1",
                                                                                  "lib.scale.x_f__mutmut_2"],
                        "equivalent": {}, "score": 0.8}}
    mutation.judge(record, "lib.scale.x_f__mutmut_2", " no input tells them apart ")
    assert record["scale"]["surviving"] == ["lib.scale.x_f__mutmut_1"]
    assert record["scale"]["equivalent"] == {"lib.scale.x_f__mutmut_2": "no input tells them apart"}
    assert record["scale"]["score"] == pytest.approx(8 / 9, abs=1e-4)
    with pytest.raises(ValueError, match="not a surviving mutant"):
        mutation.judge(record, "lib.scale.x_f__mutmut_2", "again")
    with pytest.raises(ValueError, match="say why"):
        mutation.judge(record, "lib.scale.x_f__mutmut_1", "  ")


def test_a_gpu_only_mutant_stays_surviving_and_is_listed_apart():
    """Issue 37: a mutant only a GPU run could tell apart is not equivalent: it counts against the score,
    also when it had been judged equivalent before."""
    record = {"scale": {"mutants": 10, "killed": 8, "timeouts": 0, "surviving": ["lib.scale.x_f__mutmut_1"],
                        "equivalent": {"lib.scale.x_f__mutmut_2": "a no-op on the CPU"}, "score": 8 / 9}}
    mutation.mark_gpu_only(record, "lib.scale.x_f__mutmut_2", " .to(None) for .to(device) ")
    assert record["scale"]["surviving"] == ["lib.scale.x_f__mutmut_1", "lib.scale.x_f__mutmut_2"]
    assert record["scale"]["equivalent"] == {}
    assert record["scale"]["gpu_only"] == {"lib.scale.x_f__mutmut_2": ".to(None) for .to(device)"}
    assert record["scale"]["score"] == pytest.approx(0.8)
    mutation.mark_gpu_only(record, "lib.scale.x_f__mutmut_1", "a CUDA generator not forked")
    assert record["scale"]["score"] == pytest.approx(0.8) and len(record["scale"]["gpu_only"]) == 2
    with pytest.raises(ValueError, match="not a surviving mutant"):
        mutation.mark_gpu_only(record, "lib.scale.x_f__mutmut_9", "why")
    with pytest.raises(ValueError, match="say what only a GPU"):
        mutation.mark_gpu_only(record, "lib.scale.x_f__mutmut_1", " ")
    with pytest.raises(ValueError, match="recorded as GPU-only"):
        mutation.judge(record, "lib.scale.x_f__mutmut_1", "a no-op on the CPU")


def test_record_round_trips_in_the_on_disk_layout(tmp_path):
    path = tmp_path / "mutation.json"
    record = {"scale": {"score": 1.0}, "nets": {"score": 0.8}}
    mutation.save_record(record, path)
    import json

    assert list(json.loads(path.read_text())["modules"]) == ["lib/nets.py", "lib/scale.py"]
    assert mutation.load_record(path) == record
    assert mutation.load_record(tmp_path / "absent.json") == {}
