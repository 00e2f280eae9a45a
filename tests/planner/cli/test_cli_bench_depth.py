"""``planner bench depth``: the third edition by default (``--edition 2`` the second), its flags, one-line refusals."""

from __future__ import annotations

import json

import attrs
import pytest

from planner.cli import main


def _tiny():
    from studies.depth3.run import Config

    # one small generated case per seed, no shipped or outside cases, no peer: seconds, not minutes
    return Config(instances=1, max_obs=8, shipped=False, outside=False, peer=False, label="preview")


def test_depth_runs_the_third_edition_with_the_given_flags(tmp_path, monkeypatch, capsys):
    import studies.depth3.run as d3

    seen = {}

    def fake(config, out, **kw):
        seen.update(config=config, out=out, **kw)
        return {"out": out, "rows": 0, "cases": 0, "files": [], "notes": []}

    monkeypatch.setattr(d3, "run_study", fake)
    out = tmp_path / "q"
    assert main(["bench", "depth", "--quick", "--out", str(out), "--workers", "2", "--resume", "--no-peer",
                 "--no-plots", "--no-progress"]) == 0
    preview = d3.Config.preview()
    assert seen["config"] == attrs.evolve(preview, label="quick", peer=False)  # --quick is the preview's cases
    assert (seen["out"], seen["workers"], seen["resume"], seen["plots"], seen["progress"]) == (
        str(out), 2, True, False, False)
    assert seen["command"].startswith("planner bench depth --quick --out ")
    # without --quick: the full configuration, the default folder of the third edition
    assert main(["bench", "depth", "--no-progress"]) == 0
    assert seen["config"] == d3.Config.full() and str(seen["out"]) == d3.DEFAULT_OUT
    assert "cases" in capsys.readouterr().out


def test_edition_2_is_still_reachable(monkeypatch):
    import studies.depth.run as d2

    seen = {}

    def fake(**kw):
        seen.update(kw)
        return {"out": kw["out"], "rows": {"case": []}, "seconds": 0.0, "files": [], "notes": []}

    monkeypatch.setattr(d2, "run_study", fake)
    assert main(["bench", "depth", "--edition", "2", "--quick", "--no-progress"]) == 0
    assert seen["quick"] and seen["out"] == d2.DEFAULT_OUT_QUICK
    assert seen["command"].startswith("planner bench depth --edition 2 --quick")


def test_bad_depth_arguments_are_one_line_and_exit_2(capsys):
    assert main(["bench", "depth", "--quick", "--workers", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["planner: error: --workers: must be >= 1, got 0"]
    with pytest.raises(SystemExit) as e:  # a usage error, from argparse
        main(["bench", "depth", "--edition", "1"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "argument --edition: invalid choice: 1 (choose from 2, 3)" in err[-1]


@pytest.mark.slow
def test_a_tiny_third_edition_run_through_the_cli(tmp_path, monkeypatch, capsys):
    import studies.depth3.run as d3

    monkeypatch.setattr(d3.Config, "preview", classmethod(lambda cls: _tiny()))
    out = tmp_path / "q"
    assert main(["bench", "depth", "--quick", "--out", str(out), "--no-progress", "--no-peer", "--resume"]) == 0
    report = (out / "report.md").read_text(encoding="utf-8").splitlines()
    assert report[0].startswith("# PREVIEW - Depth study, third edition")
    meta = json.loads((out / "meta.json").read_text(encoding="utf-8"))
    assert meta["label"] == "quick" and meta["command"].startswith("planner bench depth --quick")
    assert meta["peer"]["note"] == "POUCT peer not run (switched off)."
    assert not (tmp_path / ".q.jobs").exists()  # the resume cache is removed when the run completes
    assert "5 cases" in capsys.readouterr().out


@pytest.mark.slow
def test_resume_takes_finished_jobs_from_the_cache(tmp_path, monkeypatch):
    import studies.depth3.run as d3

    config = _tiny()
    out = tmp_path / "r"
    jobs = d3.build_jobs(config)
    cache = tmp_path / ".r.jobs"
    cache.mkdir()
    # a finished job left by an interrupted run: its rows are taken as they are, the job is not run again
    first = d3._job((jobs[0], None, config.peer_episodes))
    (cache / (jobs[0].key.replace("/", "_") + ".json")).write_text(json.dumps(first), encoding="utf-8")
    ran = []
    real = d3._job
    monkeypatch.setattr(d3, "_job", lambda task: ran.append(task[0].key) or real(task))
    res = d3.run_study(config, out, progress=False, resume=True)
    assert res["cases"] == len(jobs) and jobs[0].key not in ran and len(ran) == len(jobs) - 1
    assert not cache.exists()
