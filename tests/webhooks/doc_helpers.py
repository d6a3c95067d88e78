"""The verification helpers exactly as docs/webhooks.md prints them, for the tests to run."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "webhooks.md"


def doc_block(language: str) -> str:
    """The documentation's one code block in ``language`` (``python``, ``ts``)."""
    blocks = re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) == 1, f"docs/webhooks.md should hold one {language} block, not {len(blocks)}"
    return blocks[0]


def python_verifier() -> Callable[..., bool]:
    namespace: dict = {}
    exec(compile(doc_block("python"), str(DOC), "exec"), namespace)  # noqa: S102 (the documentation's own code)
    return namespace["atlas_signature_verify"]


#: The TypeScript block's annotations, and only those (a parameter's, a variable's, the return type).
TS_ANNOTATION = re.compile(r"(?<=[\w)])\s*:\s*(?:string\[\]|string \| Buffer|string|number|boolean)(?=\s*[,)={;])")


def typescript_as_javascript() -> str:
    """The TypeScript block with its type annotations removed: what Node 20 runs (no compiler here)."""
    return TS_ANNOTATION.sub("", doc_block("ts"))
