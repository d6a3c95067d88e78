"""URL map: the dashboard (/), admin (login through allauth), accounts, health, the REST API with its schema and docs."""

from django.contrib import admin
from django.contrib.auth.decorators import login_required
from django.urls import include, path
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerSplitView

from memory.dashboard import tenant_urls as memory_tenant_urls
from tenants.dashboard import urls as tenant_urls
from webhooks.dashboard import urls as webhook_tenant_urls

from .observability.http import metrics_view
from .views import SchemaView, favicon, healthz

# Operators log in to the admin through allauth (email login, verification),
# not through the admin's own username/password form.
admin.site.login = login_required(admin.site.login)
admin.site.site_header = "Atlas Memory administration"

urlpatterns = [
    path("", include("memory.dashboard.urls")),
    # The tenant section: the tenants app's pages, the memory app's (a subject's memories, the catalog, job
    # runs) and the webhooks app's, one namespace: tenants imports nothing of either.
    path(
        "tenant/",
        include((tenant_urls.urlpatterns + memory_tenant_urls.urlpatterns + webhook_tenant_urls.urlpatterns, "tenant")),
    ),
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics_view, name="metrics"),
    # Pages that name no icon (the admin's, the API docs) still get one, not a 404 in every console.
    path("favicon.ico", favicon),
    path("admin/", admin.site.urls),
    path("accounts/", include("allauth.urls")),
    path("api/v1/schema/", SchemaView.as_view(), name="api-schema"),
    # The split view serves Swagger UI's start-up script from its own URL: no inline script (atlas_site/csp.py).
    path("api/v1/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/v1/redoc/", SpectacularRedocView.as_view(url_name="api-schema"), name="api-redoc"),
    path("api/v1/", include("tenants.api.urls")),
    path("api/v1/", include("memory.api.urls")),
    path("api/v1/", include("webhooks.api.urls")),
]
