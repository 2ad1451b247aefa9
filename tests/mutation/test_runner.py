"""The mutation runner's own rules (tests/mutation/runner.py): its config, the operators it leaves out, the ignore
list's matching, the kill rate and the report. The sessions themselves run by hand (tests/mutation/run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.mutation.runner import Ignored, ModuleResult, cosmic_config, excluded, load_config, report, session_command


def test_every_configured_module_and_test_file_exists_and_every_ignore_has_a_reason() -> None:
    modules, ignored = load_config()
    assert modules, "no module configured"
    for module, tests in modules.items():
        assert (REPO_ROOT / module).is_file(), module
        assert tests and all((REPO_ROOT / t).is_file() for t in tests), module
    assert all(entry.reason.strip() for entry in ignored)
    for entry in ignored:
        lines = [line.strip() for line in (REPO_ROOT / entry.module).read_text(encoding="utf-8").splitlines()]
        assert entry.line.strip() in lines, f"ignore entry names a line {entry.module} no longer has: {entry.line}"


def test_an_ignore_entry_without_a_reason_or_for_an_unknown_module_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[modules."a.py"]\ntests = ["t.py"]\n[[ignore]]\nmodule = "a.py"\noperator = "o"\nline = "x"\nreason = " "\n'
    )
    with pytest.raises(ValueError, match="no reason"):
        load_config(config)
    config.write_text('[modules."a.py"]\ntests = ["t.py"]\n[[ignore]]\nmodule = "b.py"\noperator = "o"\nline = "x"\n')
    with pytest.raises(ValueError):
        load_config(config)


@pytest.mark.parametrize(
    ("operator", "left_out"),
    [
        ("core/ReplaceComparisonOperator_Lt_LtE", False),
        ("core/ReplaceComparisonOperator_Lt_GtE", False),
        ("core/ReplaceComparisonOperator_Eq_NotEq", False),
        ("core/ReplaceComparisonOperator_Is_IsNot", False),
        ("core/NumberReplacer", False),
        ("core/ReplaceAndWithOr", False),
        ("core/ExceptionReplacer", False),
        ("core/ZeroIterationForLoop", False),
        ("core/ReplaceBinaryOperator_Add_Sub", False),
        ("core/ReplaceBinaryOperator_Add_Pow", True),
        ("core/ReplaceBinaryOperator_BitOr_Add", True),
        ("core/ReplaceComparisonOperator_Eq_Is", True),
        ("core/ReplaceComparisonOperator_Lt_Gt", True),
        ("core/VariableReplacer", True),
        ("core/RemoveDecorator", True),
    ],
)
def test_only_noise_operators_are_left_out(operator: str, left_out: bool) -> None:
    assert excluded(operator) is left_out


def test_an_ignore_entry_matches_its_module_operator_and_line_whatever_the_indentation() -> None:
    entry = Ignored("m.py", "core/NumberReplacer", "LIMIT = 3", "why")
    assert entry.matches("m.py", "core/NumberReplacer", "    LIMIT = 3  ")
    assert not entry.matches("m.py", "core/NumberReplacer", "LIMIT = 4")
    assert not entry.matches("n.py", "core/NumberReplacer", "LIMIT = 3")
    assert not entry.matches("m.py", "core/AddNot", "LIMIT = 3")


def test_the_kill_rate_counts_killed_over_judged_and_the_report_lists_survivors() -> None:
    result = ModuleResult("m.py", killed=9, survived=[(3, "core/AddNot", "--- a\n+++ b\n-if x:\n+if not x:\n")])
    assert result.rate == 0.9
    assert ModuleResult("m.py").rate is None
    text = report(result)
    assert text.startswith("m.py: kill rate 90.0 % (9/10 killed, 1 survived")
    assert "  survived m.py:3 core/AddNot\n    -if x:\n    +if not x:" in text


def test_the_session_runs_only_the_covering_tests_in_one_process() -> None:
    command = session_command("/py", ["tests/a.py", "tests/b.py"])
    assert command[:3] == ["/py", "-m", "pytest"] and command[-2:] == ["tests/a.py", "tests/b.py"]
    assert "-x" in command and "no:xdist" in command
    config = cosmic_config("k3deploy/x.py", command, 61.4)
    assert 'module-path = "k3deploy/x.py"' in config and "timeout = 61" in config
    assert 'name = "local"' in config


def test_an_entry_with_to_names_one_of_the_mutants_of_its_line() -> None:
    entry = Ignored("m.py", "core/NumberReplacer", "x = a or 0", "why", to="x = a or -1")
    assert entry.matches("m.py", "core/NumberReplacer", "  x = a or 0", "  x = a or -1")
    assert not entry.matches("m.py", "core/NumberReplacer", "x = a or 0", "x = a or 1")
    assert not entry.matches("m.py", "core/NumberReplacer", "x = a or 0")
