"""The fake LLM server every consolidation test scripts (tests/fake_llm.py), configured as the run's LLM."""

from __future__ import annotations

import pytest

from tests.fake_llm import llm_serving


@pytest.fixture
def llm(settings):
    with llm_serving(
        settings,
        ATLAS_LLM_API_KEY="sk-test-fake-key",
        ATLAS_LLM_RETRIES=1,
        ATLAS_LLM_BACKOFF=0.01,
        ATLAS_LLM_TIMEOUT=5,
        ATLAS_LLM_PRICE_PROMPT=2.0,
        ATLAS_LLM_PRICE_COMPLETION=8.0,
        ATLAS_USAGE_RECORDING="off",
    ) as fake:
        yield fake
