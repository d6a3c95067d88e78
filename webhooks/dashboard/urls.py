"""The webhooks app's pages in the tenant section, under the section's ``tenant`` names: atlas_site/urls.py
mounts them beside tenants.dashboard.urls."""

from django.urls import path

from . import views

urlpatterns = [
    path("<slug:slug>/webhooks/", views.webhooks, name="webhooks"),
    path("<slug:slug>/webhooks/<str:webhook_id>/", views.webhook, name="webhook"),
    path("<slug:slug>/webhooks/<str:webhook_id>/enabled/", views.webhook_enabled, name="webhook_enabled"),
    path("<slug:slug>/webhooks/<str:webhook_id>/rotate/", views.webhook_rotate, name="webhook_rotate"),
    path("<slug:slug>/webhooks/<str:webhook_id>/delete/", views.webhook_delete, name="webhook_delete"),
    path(
        "<slug:slug>/webhooks/<str:webhook_id>/deliveries/<str:delivery_id>/again/",
        views.delivery_again,
        name="webhook_redeliver",
    ),
]
