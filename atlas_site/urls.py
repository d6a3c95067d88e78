"""URL map: admin (login through allauth), accounts, health, the REST API with its schema and docs."""

from django.contrib import admin
from django.contrib.auth.decorators import login_required
from django.urls import include, path
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerView

from .views import SchemaView, healthz, home

# Operators log in to the admin through allauth (email login, verification),
# not through the admin's own username/password form.
admin.site.login = login_required(admin.site.login)
admin.site.site_header = "Atlas Memory administration"

urlpatterns = [
    path("", home, name="home"),
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("accounts/", include("allauth.urls")),
    path("api/v1/schema/", SchemaView.as_view(), name="api-schema"),
    path("api/v1/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/v1/redoc/", SpectacularRedocView.as_view(url_name="api-schema"), name="api-redoc"),
    path("api/v1/", include("tenants.api.urls")),
    path("api/v1/", include("memory.api.urls")),
]
