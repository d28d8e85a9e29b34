"""The report pages' Jinja2 environment: compiled templates kept between processes (CompiledTemplates), used
only while a template's source is unchanged, and never a fault."""

from __future__ import annotations

import jinja2

from flametool.render import jinja_env


compiled: list[str] = []


class Counting(jinja2.Environment):
    """Counts the templates it compiles (a template loaded from the cache is not compiled)."""

    def compile(self, source, name=None, filename=None, raw=False, defer_init=False):
        compiled.append(name)
        return super().compile(source, name, filename, raw, defer_init)


def render(templates, cache) -> str:
    env = Counting(loader=jinja2.FileSystemLoader(str(templates)), bytecode_cache=cache)
    return env.get_template("t.j2").render(x=1)


def test_a_template_is_compiled_once_and_again_when_its_source_changes(tmp_path):
    templates, kept = tmp_path / "templates", tmp_path / "cache"
    templates.mkdir()
    kept.mkdir()
    (templates / "t.j2").write_text("a{{ x }}")
    compiled.clear()
    assert render(templates, jinja_env.CompiledTemplates(str(kept))) == "a1" and compiled == ["t.j2"]
    (entry,) = kept.iterdir()
    # a fresh environment (another process) reads the kept code, compiling nothing
    assert render(templates, jinja_env.CompiledTemplates(str(kept))) == "a1" and compiled == ["t.j2"]
    (templates / "t.j2").write_text("b{{ x }}")
    assert render(templates, jinja_env.CompiledTemplates(str(kept))) == "b1" and compiled == ["t.j2", "t.j2"]
    assert list(kept.iterdir()) == [entry]


def test_an_unreadable_entry_or_a_folder_that_cannot_be_written_is_compiling_again(tmp_path):
    templates, kept = tmp_path / "templates", tmp_path / "cache"
    templates.mkdir()
    kept.mkdir()
    (templates / "t.j2").write_text("a{{ x }}")
    render(templates, jinja_env.CompiledTemplates(str(kept)))
    (entry,) = kept.iterdir()
    for junk in (b"", b"j2" + b"\x80" * 40, entry.read_bytes()[:-7]):
        entry.write_bytes(junk)
        compiled.clear()
        assert render(templates, jinja_env.CompiledTemplates(str(kept))) == "a1" and compiled == ["t.j2"]
    assert render(templates, jinja_env.CompiledTemplates(str(tmp_path / "gone"))) == "a1"  # no folder: no write


def test_the_report_environment_keeps_its_templates_in_jinja2_s_own_folder():
    cache = jinja_env.environment().bytecode_cache
    assert isinstance(cache, jinja_env.CompiledTemplates)
    assert jinja_env.compiled_templates() is not None
