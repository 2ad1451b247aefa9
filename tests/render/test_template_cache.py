"""The compiled templates' cache (render/template_cache.py): it changes no byte of the output, a template edited
since recompiles, a damaged entry or a folder that is not the user's alone is a compile, never an error."""

from __future__ import annotations

import os
from pathlib import Path

import jinja2

from k3deploy.render.template_cache import FOLDER, bytecode_cache, cache_root
from tests.conftest import EXAMPLE_SETS, REPO_ROOT, run_cli_process

K3 = "kimi-k3-gb300-tp16"


def _environment(templates: Path, cache: jinja2.BytecodeCache | None) -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates)), bytecode_cache=cache, auto_reload=False)


def _entries(root: Path) -> list[Path]:
    return sorted((root / FOLDER).rglob("*.cache"))


def test_render_with_a_cold_and_a_warm_cache_writes_the_committed_manifests(tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    committed = {p.name: p.read_bytes() for p in (REPO_ROOT / "manifests" / K3).iterdir()}
    for run in ("cold", "warm"):
        out = tmp_path / run
        result = run_cli_process(
            "render", "-p", K3, *EXAMPLE_SETS, "-o", str(out), env=env
        )  # its own process: a fresh environment()
        assert result.returncode == 0, result.stderr
        assert {p.name: p.read_bytes() for p in out.iterdir()} == committed
        if run == "cold":
            entries = _entries(tmp_path / "cache" / "k3deploy")
            assert len(entries) >= 16  # one per template the set used
            stamps = {p: p.stat().st_mtime_ns for p in entries}
    assert {p: p.stat().st_mtime_ns for p in _entries(tmp_path / "cache" / "k3deploy")} == stamps  # read, not rewritten


def test_a_template_edited_since_it_was_cached_is_compiled_again(tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "t.j2").write_text("first {{ x }}")
    assert _environment(templates, bytecode_cache(b"test", tmp_path)).get_template("t.j2").render(x=1) == "first 1"
    assert len(_entries(tmp_path)) == 1
    (templates / "t.j2").write_text("second {{ x }}")
    assert _environment(templates, bytecode_cache(b"test", tmp_path)).get_template("t.j2").render(x=1) == "second 1"


def test_a_new_environment_identity_is_a_new_cache_folder(tmp_path: Path) -> None:
    a, b = bytecode_cache(b"options a", tmp_path), bytecode_cache(b"options b", tmp_path)
    assert isinstance(a, jinja2.FileSystemBytecodeCache) and isinstance(b, jinja2.FileSystemBytecodeCache)
    assert a.directory != b.directory
    assert bytecode_cache(b"options a", tmp_path).directory == a.directory  # type: ignore[union-attr]


def test_a_damaged_entry_is_compiled_again(tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "t.j2").write_text("value {{ x }}")
    _environment(templates, bytecode_cache(b"test", tmp_path)).get_template("t.j2")
    (entry,) = _entries(tmp_path)
    whole = entry.read_bytes()
    magic = len(jinja2.bccache.bc_magic)
    # Cut inside the pickled checksum (jinja2 itself raises there), inside the code, and before the magic.
    for damage in (whole[: magic + 3], whole[: len(whole) // 2], b"\x00" * 40, b""):
        entry.write_bytes(damage)
        assert _environment(templates, bytecode_cache(b"test", tmp_path)).get_template("t.j2").render(x=2) == "value 2"


def test_a_folder_it_cannot_make_means_no_cache(tmp_path: Path) -> None:
    (tmp_path / "k3deploy").write_text("a file where the cache's folder would go\n")
    assert bytecode_cache(b"test", tmp_path / "k3deploy") is None
    assert (tmp_path / "k3deploy").read_text() == "a file where the cache's folder would go\n"


def test_a_folder_others_may_write_into_is_not_used(tmp_path: Path) -> None:
    cache = bytecode_cache(b"test", tmp_path)
    assert isinstance(cache, jinja2.FileSystemBytecodeCache)
    Path(cache.directory).chmod(0o777)
    assert bytecode_cache(b"test", tmp_path) is None


def test_a_write_that_fails_is_skipped(tmp_path: Path) -> None:
    cache = bytecode_cache(b"test", tmp_path)
    assert isinstance(cache, jinja2.FileSystemBytecodeCache)
    Path(cache.directory).rmdir()  # gone between the check and the write: jinja2's temporary file cannot be made
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "t.j2").write_text("value {{ x }}")
    assert _environment(templates, cache).get_template("t.j2").render(x=3) == "value 3"


def test_the_cache_lives_in_k3deploys_folder_of_the_users_cache() -> None:
    assert cache_root({"XDG_CACHE_HOME": "/x/cache"}) == Path("/x/cache/k3deploy")
    assert cache_root({}) == Path(os.path.expanduser("~")) / ".cache" / "k3deploy"
