"""bench/outputs.py: the files a bench writes are checked before the run, two outputs never on one file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from k3deploy.bench.cli_run import Request
from k3deploy.bench.outputs import outputs_of
from k3deploy.errors import UsageError
from tests.conftest import run_cli


def _request(**kw: object) -> Request:
    return Request(endpoint="http://127.0.0.1:1", profile=None, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("report", "csv", "other"),
    [
        ("r.json", "r.json", None),  # the same spelling
        ("r.json", "./sub/../r.json", None),  # another spelling of the same file
        ("r.json", None, "r.json"),  # --html on the report's path
    ],
)
def test_two_outputs_on_one_file_are_refused_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, report: str, csv: str | None, other: str | None
) -> None:
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match="name the same file"):
        outputs_of(
            _request(),
            Path(report),
            Path(other) if other else None,
            None,
            Path(csv) if csv else None,
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sub"]  # nothing written


def test_a_hard_link_and_a_linked_folder_are_the_same_file(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    with pytest.raises(UsageError, match=r"--csv .* and --report .* name the same file"):
        outputs_of(_request(), tmp_path / "real" / "r.json", None, None, tmp_path / "alias" / "r.json")
    first = tmp_path / "a.json"
    first.write_text("")
    os.link(first, tmp_path / "b.json")
    with pytest.raises(UsageError, match="name the same file"):
        outputs_of(_request(), first, None, None, tmp_path / "b.json", force=True)


def test_an_ab_run_report_named_like_another_output_is_refused(tmp_path: Path) -> None:
    """--ab writes NAME-LABEL.json per run: a --csv on one of those names would replace that run's report."""
    request = _request(ab=True)
    outputs = outputs_of(request, tmp_path / "r.json", None, None, tmp_path / "r.csv")
    names = [out.name for out in outputs.reports]
    with pytest.raises(UsageError, match="name the same file"):
        outputs_of(request, tmp_path / "r.json", None, None, tmp_path / names[1])


def test_distinct_outputs_pass(tmp_path: Path) -> None:
    outputs = outputs_of(_request(), tmp_path / "r.json", None, None, tmp_path / "r.csv")
    assert [out.name for out in outputs.reports] == ["r.json"] and outputs.csv is not None


def test_the_cli_refuses_before_reaching_the_endpoint(tmp_path: Path) -> None:
    """Port 1 on loopback: nothing listens there, so a run that started would exit 3, not 2."""
    report = tmp_path / "r.json"
    result = run_cli(
        "bench", "--endpoint", "http://127.0.0.1:1", "-p", "local-cpu", "--report", str(report), "--csv", str(report)
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("error: --csv") and "name the same file" in lines[0] and lines[-1].startswith("hint:")
    assert not report.exists()


def test_compare_refuses_an_output_on_one_of_its_reports(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text("{}")
    b.write_text("{}")
    result = run_cli("bench", "compare", str(a), str(b), "--html", str(a), "--force")
    assert result.returncode == 2, result.stderr
    assert "--html" in result.stderr and "name the same file" in result.stderr
    assert a.read_text() == "{}"
