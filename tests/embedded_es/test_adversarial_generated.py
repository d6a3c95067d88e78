"""Generated attacks (Hypothesis) by a read-only DLS key: the gateway's invariants hold for every request.

The attacker holds ``read`` on ``adv-*`` with the DLS query tenant = t1 AND (user = u1 OR no user)
(``narrow``: read on adv-a only; ``meta``: read + view_index_metadata). Every request must:
never be answered 5xx, answer errors in Elasticsearch's shape, never return a hidden document's
secret token, and change nothing the superuser can see (tests/embedded_es/adversarial.py).

Why these are the rules:
* DLS filters every read at the shard reader, so no API can return a document the role query does
  not match (x-pack/plugin/core/src/main/java/org/elasticsearch/xpack/core/security/authz/accesscontrol/
  DocumentSubsetReader.java; https://www.elastic.co/guide/en/elasticsearch/reference/8.15/document-level-security.html).
* ``read`` grants ``indices:data/read/*`` (+ resolve) only, so no write, admin or metadata action can
  succeed (x-pack/plugin/core/.../authz/privilege/IndexPrivilege.java;
  https://www.elastic.co/guide/en/elasticsearch/reference/8.15/security-privileges.html); an action no
  role grants on any index is refused whatever the index expression
  (x-pack/plugin/security/src/main/java/org/elasticsearch/xpack/security/authz/RBACEngine.java, the
  ``checkIndicesAction`` shortcut in authorizeIndexAction).
* Errors leave the node in the envelope ElasticsearchException.generateFailureXContent builds
  (https://www.elastic.co/guide/en/elasticsearch/reference/8.15/common-options.html, "Error responses").
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TypeVar

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from .attack_requests import FAMILIES, attack_request

T = TypeVar("T")

# Shrinking re-sends requests for minutes once something fails; ADV_SHRINK=1 turns it on locally.
_PHASES = [Phase.explicit, Phase.reuse, Phase.generate] + ([Phase.shrink] if os.environ.get("ADV_SHRINK") else [])
_EXAMPLES = int(os.environ.get("ADV_EXAMPLES", "60"))
ADV_SETTINGS = settings(
    max_examples=_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    phases=_PHASES,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)


class HypothesisChooser:
    def __init__(self, data: st.DataObject) -> None:
        self.data = data
        self.plain = False

    def choice(self, options: Sequence[T]) -> T:
        return self.data.draw(st.sampled_from(list(options)))

    def integer(self, low: int, high: int) -> int:
        return self.data.draw(st.integers(low, high))

    def text(self, alphabet: str, max_size: int) -> str:
        return self.data.draw(st.text(alphabet, max_size=max_size))


@pytest.mark.parametrize("family", sorted(FAMILIES))
@ADV_SETTINGS
@given(data=st.data())
def test_generated_attacks_keep_the_invariants(adv, family: str, data: st.DataObject) -> None:
    """One endpoint family per case; the principal, index expression, parameters, headers and body are drawn."""
    chooser = HypothesisChooser(data)
    principal = chooser.choice(["attacker", "attacker", "narrow", "meta"])
    chooser.plain = chooser.choice([False, False, True])
    request = attack_request(chooser, adv.fixture.hidden_ids, [family])
    adv.attack(request, principal)
