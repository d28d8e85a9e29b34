"""The report pages' Jinja2 environment: where the templates are (in the wheel as flametool/templates, in a
checkout as the top-level templates/), the environment made once a process (its compiled templates are kept), the
assets inlined as they are, JSON safe inside a <script>, and a template filled with its view model."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import jinja2
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


@functools.lru_cache(maxsize=None)
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
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
