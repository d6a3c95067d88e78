"""Every variable the settings read is in .env.example, with a comment that says what it does (issue 33):
the file is how an operator learns what can be configured."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The settings modules: deployment settings, and recall's ranking knobs apart from them.
SETTINGS_MODULES = ("atlas_site/settings.py", "atlas_site/recall_settings.py")
VARIABLE_LINE = re.compile(r"^#?\s*([A-Z][A-Z0-9_]+)=(.*)$")


def _read_by(module: str) -> set[str]:
    """The environment variables a settings module reads: ``env(...)``, ``env.<type>(...)``, ``os.environ.get``."""
    names: set[str] = set()
    for node in ast.walk(ast.parse((ROOT / module).read_text())):
        if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)):
            continue
        func = node.func
        reads_env = (isinstance(func, ast.Name) and func.id == "env") or (
            isinstance(func, ast.Attribute)
            and (
                (isinstance(func.value, ast.Name) and func.value.id == "env")
                or (func.attr == "get" and isinstance(func.value, ast.Attribute) and func.value.attr == "environ")
            )
        )
        if reads_env and isinstance(node.args[0].value, str):
            names.add(node.args[0].value)
    return names


def _explained(lines: list[str], index: int) -> bool:
    """The variable on ``lines[index]`` has a comment after its value, or the first line above its group of
    variables is a comment of a few words (not a bare section rule)."""
    value = VARIABLE_LINE.match(lines[index]).group(2)
    if re.search(r"\s#\s*\S", value):
        return True
    for line in reversed(lines[:index]):
        if not line.strip():
            return False
        if VARIABLE_LINE.match(line):
            continue
        words = [w for w in line.lstrip("#").split() if w.strip("-")]
        return line.startswith("#") and len(words) >= 3
    return False


def _documented() -> dict[str, bool]:
    lines = (ROOT / ".env.example").read_text().splitlines()
    return {
        VARIABLE_LINE.match(line).group(1): _explained(lines, i)
        for i, line in enumerate(lines)
        if VARIABLE_LINE.match(line)
    }


def test_the_settings_read_about_a_hundred_variables() -> None:
    read = set().union(*(_read_by(module) for module in SETTINGS_MODULES))
    assert len(read) > 100  # the walk finds them: a broken walk must not pass by finding none
    assert {"DJANGO_SECRET_KEY", "ATLAS_FUSION", "ATLAS_TURN_ASKED_PRIOR", "DJANGO_SESSION_COOKIE_SECURE"} <= read


def test_every_variable_the_settings_read_is_in_the_example_with_a_comment() -> None:
    documented = _documented()
    for module in SETTINGS_MODULES:
        read = _read_by(module)
        assert sorted(read - set(documented)) == [], f"read by {module}, missing from .env.example"
        assert sorted(name for name in read if not documented[name]) == [], "in .env.example without a comment"


def test_the_example_names_no_variable_nobody_reads() -> None:
    read = set().union(*(_read_by(module) for module in SETTINGS_MODULES))
    # Read elsewhere: by the embedded engine, the model loaders, make run, or the compose file.
    sources = [p for app in ("embedded_es", "memory", "atlas_site") for p in (ROOT / app).rglob("*.py")]
    texts = [path.read_text() for path in (*sources, ROOT / "docker-compose.yml")]
    elsewhere = {name for name in _documented() if any(name in text for text in texts)}
    assert sorted(set(_documented()) - read - elsewhere) == []


def test_a_variable_without_a_comment_is_caught() -> None:
    lines = [
        "# --- Django",
        "DJANGO_DEBUG=false",
        "",
        "# A comment that explains.",
        "# ATLAS_X=1",
        "# ATLAS_Y=2  # inline",
    ]
    assert [_explained(lines, i) for i in (1, 4, 5)] == [False, True, True]
