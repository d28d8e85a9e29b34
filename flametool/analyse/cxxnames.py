"""C++ names as people read them: a mangled kernel or frame name (`_ZN2at6native...`) demangled with cxxfilt
(which calls the C++ runtime's own demangler), and a short form for tables that keeps the outer name and
hides the template arguments past a depth (`at::native::vectorized_elementwise_kernel<…>`). The full name
stays in run.json, the summary's JSON and the report's hover text; only the tables show the short one."""

from __future__ import annotations

import re
from functools import lru_cache

HIDDEN = "…"
# the name Python gives code that has no name of its own (<lambda>, <listcomp>, <dictcomp>, <genexpr>, <module>),
# after a module's '.' in a counted Python call's name: a C++ template's '<' follows a name, never a '.'
PYTHON_CODE_NAME = re.compile(r"<[A-Za-z_][A-Za-z0-9_]*>")


@lru_cache(maxsize=4096)
def demangled(name: str) -> str:
    """The demangled name of a mangled C++ symbol; any other name (Python, a CUDA API call, a name cxxfilt cannot
    read or cxxfilt absent) as it is."""
    if not name.startswith("_Z"):
        return name
    try:
        import cxxfilt  # the C++ runtime's demangler, through ctypes

        text = cxxfilt.demangle(name)
    except Exception:  # noqa: BLE001 - any failure of the demangler leaves the name as recorded
        return name
    return text if isinstance(text, str) and text else name


def _drop_return_type(text: str) -> str:
    """'void at::native::k<...>(...)' -> 'at::native::k<...>(...)': a kernel's return type (always void) first."""
    depth = 0
    for i, ch in enumerate(text):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == " " and depth == 0 and not text.startswith(("operator", "(anonymous")):
            head = text[:i]
            if head in ("void", "int", "bool", "float", "double", "unsigned", "long") or head.endswith(("*", "&")):
                return text[i + 1:]
            return text
    return text


def shortened(name: str, depth: int = 1) -> str:
    """A demangled name with the template arguments and parameter lists nested deeper than `depth` shown as '…'
    and the return type dropped: 'void at::native::vectorized_elementwise_kernel<8, at::native::(anonymous
    namespace)::...>(int, ...)' -> 'at::native::vectorized_elementwise_kernel<…>' (depth 1 keeps the outer name
    and hides what is inside its first brackets); a name without brackets as it is."""
    text = _drop_return_type(demangled(name))
    out: list[str] = []
    level = 0
    i = 0
    while i < len(text):
        ch = text[i]
        i += 1
        code = PYTHON_CODE_NAME.match(text, i - 1) if ch == "<" and (i == 1 or text[i - 2] == ".") else None
        if code is not None:  # a Python function's name, 'numpy._core.fromnumeric.<dictcomp>': no template
            if level < depth:
                out.append(code.group())
            i = code.end()
            continue
        if ch in "<(":
            level += 1
            if level == depth:
                out.append(ch + HIDDEN if ch == "<" else "")
            elif level < depth:
                out.append(ch)
            continue
        if ch in ">)":
            level -= 1
            if level + 1 == depth:
                out.append(">" if ch == ">" else "")
            elif level + 1 < depth:
                out.append(ch)
            continue
        if level < depth:
            out.append(ch)
    return "".join(out).strip() or text
