"""How the OpenAPI schema describes the API's bearer tokens (imported by MemoryConfig.ready)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "atlas_site.api.BearerTokenAuthentication"
    name = "bearer"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "atlas_<prefix>_<secret>",
            "description": "A tenant service token or a subject token: manage.py atlas_token create.",
        }
