"""The site's browser tests need the live server and the browser harness."""

from tests.browser import axe_clean, browser, page, screenshot  # noqa: F401
from tests.live_server import atlas_server  # noqa: F401
