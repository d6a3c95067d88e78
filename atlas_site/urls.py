"""URL map: admin (login through allauth), accounts, health, API schema."""

from django.contrib import admin
from django.contrib.auth.decorators import login_required
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from .views import healthz, home

# Operators log in to the admin through allauth (email login, verification),
# not through the admin's own username/password form.
admin.site.login = login_required(admin.site.login)
admin.site.site_header = "Atlas Memory administration"

urlpatterns = [
    path("", home, name="home"),
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("accounts/", include("allauth.urls")),
    path("api/v1/schema/", SpectacularAPIView.as_view(), name="api-schema"),
]
