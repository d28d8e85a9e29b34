"""The report pages' Jinja2 environment: where the templates are (in the wheel as flametool/templates, in a
checkout as the top-level templates/), the environment made once a process (its compiled templates are kept), the
assets inlined as they are, JSON safe inside a <script>, and a template filled with its view model."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import jinja2
import jinja2.bccache
from markupsafe import Markup

from ..errors import FlametoolError

PAGE = "report.html.j2"
SWEEP_PAGE = "sweep.html.j2"
ATLAS_PAGE = "atlas.html.j2"


def templates_dir() -> Path:
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "templates", package.parent / "templates"):
        if (candidate / PAGE).is_file():
            return candidate
    raise FlametoolError(f"report templates not found (looked in {package / 'templates'} and "
                         f"{package.parent / 'templates'}); reinstall flametool")


class CompiledTemplates(jinja2.FileSystemBytecodeCache):
    """The templates' compiled code kept between processes: compiling the 17 templates took 0.1 s of every
    command that wrote a page (4 ms from the cache). In Jinja2's own folder for it (a folder of the user's in the
    temp dir, 0700, checked to be theirs); a template's code is used only while its source is unchanged (Jinja2
    compares a checksum of the source). The cache is an aid, never a fault: a write that fails (a full or
    read-only disk) or an entry that cannot be read means compiling again."""

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except Exception:  # noqa: BLE001 - an unreadable entry is compiled afresh
            bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass


def compiled_templates() -> CompiledTemplates | None:
    try:
        return CompiledTemplates()
    except (OSError, RuntimeError):  # no safe folder of the user's (Jinja2 raises RuntimeError)
        return None


@functools.lru_cache(maxsize=None)
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        bytecode_cache=compiled_templates(),
        autoescape=True,  # every name on the page comes from a profile: C++ names, user case files
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def asset(env: jinja2.Environment, name: str) -> Markup:
    """A CSS or JS file from templates/assets, inlined as is (not rendered: braces are not Jinja's)."""
    source, _, _ = env.loader.get_source(env, f"assets/{name}")  # type: ignore[union-attr]
    if "</" + ("style" if name.endswith(".css") else "script") in source.lower():
        raise FlametoolError(f"templates/assets/{name}: must not contain its own closing tag")
    return Markup(source)


def script_json(value: object) -> Markup:
    """JSON safe inside <script type="application/json">: '<', '>' and '&' as \\u escapes, so no name
    (a frame called '</script><img onerror=...>') can close the tag, and JSON.parse reads it back as is."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
                  .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def fill(template: str, model: object) -> str:
    """The page: the template filled with its view model (a template bug is one clear line, not the user's
    input)."""
    try:
        return environment().get_template(template).render(r=model)
    except jinja2.TemplateError as exc:
        raise FlametoolError(f"report template error: {type(exc).__name__}: {exc}") from None
