"""The browser harness itself: Debian's Chromium logs in through allauth, axe-core runs, a screenshot is kept."""

from __future__ import annotations

import pytest

from tests.browser import person_create, person_login

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_person_logs_in_and_the_page_passes_axe(page, axe_clean, screenshot):
    person_create("smoke@example.org", "a long enough password 1")
    person_login(page, "smoke@example.org", "a long enough password 1")
    axe_clean(page)
    assert screenshot(page, "smoke-home").stat().st_size > 0


def test_a_wrong_password_stays_on_the_login_page(page):
    person_create("smoke2@example.org", "a long enough password 1")
    with pytest.raises(AssertionError, match="login as smoke2@example.org failed"):
        person_login(page, "smoke2@example.org", "not the password")
