"""Routes of the webhooks API (included under ``/api/v1/``)."""

from django.urls import path

from . import views

urlpatterns = [
    path("webhooks", views.WebhooksView.as_view(), name="api-webhooks"),
    path("webhooks/<str:webhook_id>", views.WebhookView.as_view(), name="api-webhook"),
    path("webhooks/<str:webhook_id>/rotate-secret", views.WebhookSecretView.as_view(), name="api-webhook-rotate"),
    path("webhooks/<str:webhook_id>/deliveries", views.DeliveriesView.as_view(), name="api-webhook-deliveries"),
    path(
        "webhooks/<str:webhook_id>/deliveries/<str:delivery_id>/redeliver",
        views.RedeliverView.as_view(),
        name="api-webhook-redeliver",
    ),
]
