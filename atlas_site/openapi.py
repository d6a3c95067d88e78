"""How the OpenAPI schema is generated: drf-spectacular's AutoSchema, and a DELETE's declared body.

drf-spectacular documents a request body for PUT, PATCH and POST only; a route that reads a body on
DELETE (forgetting everything about a subject takes ``{"confirm": <the subject's id>}``) declares it with
``extend_schema(request=...)`` and ``delete_takes_body = True``, and this schema documents it like a POST's.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema


class AtlasAutoSchema(AutoSchema):
    def _get_request_body(self, direction: str = "request") -> Any:
        if self.method != "DELETE" or not getattr(self.view, "delete_takes_body", False):
            return super()._get_request_body(direction)
        self.method = "POST"  # the base class documents bodies of the unsafe methods only
        try:
            return super()._get_request_body(direction)
        finally:
            self.method = "DELETE"
