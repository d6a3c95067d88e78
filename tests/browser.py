"""A real browser for the page tests: Playwright driving Debian's Chromium against the live server.

Its fixtures (and ``tests.live_server``'s ``atlas_server``) are registered for every test by the root
``conftest.py`` (``pytest_plugins``). Chromium is
``/usr/bin/chromium`` (``.ci/run`` installs Debian's package; ``playwright install`` is never run) or
``ATLAS_CHROMIUM``. Without a Chromium the browser tests fail: the dashboard is not optional.

- ``page``: a fresh browser context per test (own cookies), 30 s timeouts, any page error or console
  error recorded on ``page.atlas_errors`` and asserted empty at teardown (a CSP violation is one).
- ``axe_clean(page)``: runs axe-core on the current page and fails on any serious or critical
  violation, naming the rule, its help URL and the first offending nodes.
- ``screenshot(page, name)``: a full-page PNG under ``ATLAS_SCREENSHOT_DIR`` (default
  ``test-artifacts/screenshots/``), the folder CI keeps as an artefact.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("ATLAS_CHROMIUM", "/usr/bin/chromium")
SCREENSHOT_DIR = Path(
    os.environ.get("ATLAS_SCREENSHOT_DIR", Path(__file__).resolve().parent.parent / "test-artifacts" / "screenshots")
)
BLOCKING_IMPACTS = frozenset({"serious", "critical"})


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """One Chromium per test module.

    Playwright's sync API leaves its event loop marked as running in the test's thread, so Django's
    ORM guard would refuse the test's own database work (fixtures, flushes) with
    ``SynchronousOnlyOperation``; Playwright's documented answer is ``DJANGO_ALLOW_ASYNC_UNSAFE``. It
    is set only while a browser module runs and removed after it, so the REST and MCP live-server
    tests keep Django's check on the server's event-loop thread.
    """
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"no Chromium at {CHROMIUM}: install Debian's chromium (apt-get install chromium) or set ATLAS_CHROMIUM"
        )
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
            instance = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            try:
                yield instance
            finally:
                instance.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def page(browser, atlas_server) -> Iterator[object]:
    context = browser.new_context(base_url=atlas_server.url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(30_000)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    tab.on(
        "console",
        lambda msg: errors.append(f"console {msg.type} on {tab.url}: {msg.text}") if msg.type == "error" else None,
    )
    tab.atlas_errors = errors
    try:
        yield tab
    finally:
        context.close()
    # Pages that answer 4xx on purpose log "Failed to load resource" for themselves; everything else counts.
    unexpected = [e for e in errors if "Failed to load resource" not in e]
    assert unexpected == [], unexpected


def _violations_text(violations: list[dict]) -> str:
    lines = []
    for violation in violations:
        targets = [", ".join(node.get("target", [])) for node in violation.get("nodes", [])[:3]]
        lines.append(f"{violation['impact']}: {violation['id']} ({violation['helpUrl']}) at {targets}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def axe_clean() -> Callable[[object], None]:
    from axe_playwright_python.sync_playwright import Axe

    axe = Axe()

    def check(tab) -> None:
        errors = getattr(tab, "atlas_errors", [])  # a tab a test opened itself has no record
        before = len(errors)
        result = axe.run(tab)
        # axe-core's own probing (it styles elements to test them) trips the page's CSP on some pages
        # (the admin's change forms): those console errors come from the tool, not from the page.
        errors[before:] = [e for e in errors[before:] if "Applying inline style violates" not in e]
        blocking = [v for v in result.response["violations"] if v.get("impact") in BLOCKING_IMPACTS]
        assert blocking == [], f"axe-core on {tab.url}:\n{_violations_text(blocking)}"

    return check


@pytest.fixture(scope="session")
def screenshot() -> Callable[[object, str], Path]:
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)

    def take(tab, name: str) -> Path:
        if not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", name):
            raise ValueError(f"screenshot name {name!r}: lower-case letters, digits, '-' and '_' only")
        path = SCREENSHOT_DIR / f"{name}.png"
        tab.screenshot(path=str(path), full_page=True)
        return path

    return take


def person_create(email: str, password: str, **fields):
    """A person who can log in at once: allauth's verified primary address, as after e-mail confirmation."""
    from allauth.account.models import EmailAddress

    from tenants.models import Person

    person = Person.objects.create_user(email, password, **fields)
    EmailAddress.objects.create(user=person, email=person.email, verified=True, primary=True)
    return person


def person_login(tab, email: str, password: str) -> None:
    """Log in through allauth's own form, as a person would; fails unless the login succeeds."""
    tab.goto("/accounts/login/")
    tab.get_by_label("Email").fill(email)
    tab.get_by_label("Password").fill(password)
    tab.get_by_role("button", name=re.compile("sign in", re.IGNORECASE)).click()
    tab.wait_for_load_state()
    assert "/accounts/login/" not in tab.url, f"login as {email} failed: still on {tab.url}"
