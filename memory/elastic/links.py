"""Unlinking a forgotten memory: one painless script that drops or marks its id in another memory's link
fields, on the document as stored (memory/services/forget.py, and the reconciler in supersession.py)."""

from __future__ import annotations

from elasticsearch import Elasticsearch, NotFoundError

from atlas_site.elastic.client import es_errors

from .queries import FORGOTTEN_LINK
from .store import RETRY_ON_CONFLICT


def _links_unnamed(field: str) -> str:
    """Painless: ``field``'s ids in ``params.ids`` dropped (``drop``), each replaced in place by the mark
    (``mark``), or dropped with the mark left when nothing else remains (``mark_if_empty``)."""
    return f"""
if (params.mode_{field} != null) {{
  def links_{field} = ctx._source.{field};
  if (links_{field} != null && !(links_{field} instanceof List)) {{ links_{field} = [links_{field}]; }}
  if (links_{field} != null) {{
    def out_{field} = new ArrayList();
    boolean dropped_{field} = false;
    for (def x : links_{field}) {{
      if (params.ids.contains(x)) {{
        dropped_{field} = true;
        if (params.mode_{field} == 'mark') {{ out_{field}.add(params.mark); }}
      }} else {{ out_{field}.add(x); }}
    }}
    if (dropped_{field}) {{
      if (params.mode_{field} == 'mark_if_empty' && out_{field}.size() == 0) {{ out_{field}.add(params.mark); }}
      ctx._source.{field} = out_{field};
      changed = true;
    }}
  }}
}}"""


LINK_FIELDS = ("supersedes", "superseded_by", "proposal_for", "source_episodes")
# Forgetting's unlinking (and the reconciler's): done on the document as stored, so a change made since
# the caller read it is kept — never a list written whole from a stale read — and a noop when the ids are
# gone already or the document is another one by now (``created_at``: the same id written again).
LINKS_FORGET_SCRIPT = (
    """
if (params.created_at != null && ctx._source.created_at != params.created_at) { ctx.op = 'none'; return; }
boolean changed = false;"""
    + "".join(_links_unnamed(field) for field in LINK_FIELDS)
    + """
if (!changed) { ctx.op = 'none'; }
"""
)


def memory_links_forget(
    writer: Elasticsearch,
    *,
    index: str,
    memory_id: str,
    forgotten: list[str],
    modes: dict[str, str],
    created_at: str | None,
) -> bool:
    """Unlink the ``forgotten`` ids from a memory's link fields, each as ``modes`` says (LINKS_FORGET_SCRIPT:
    ``drop``, ``mark``, ``mark_if_empty``; a field not named is left alone). False when the memory is gone
    (deleted meanwhile: nothing to unlink)."""
    unknown = set(modes) - set(LINK_FIELDS)
    if unknown:
        raise ValueError(f"not link fields: {sorted(unknown)}")
    params = {"ids": forgotten, "mark": FORGOTTEN_LINK, "created_at": created_at}
    params |= {f"mode_{field}": modes.get(field) for field in LINK_FIELDS}
    try:
        with es_errors("unlink a forgotten memory"):
            writer.update(
                index=index,
                id=memory_id,
                script={"source": LINKS_FORGET_SCRIPT, "params": params},
                retry_on_conflict=RETRY_ON_CONFLICT,
                refresh="wait_for",
            )
    except NotFoundError:
        return False
    return True
