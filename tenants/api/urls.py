"""Routes of the tenancy API (included under ``/api/v1/``)."""

from django.urls import path

from . import views

urlpatterns = [
    path("me", views.MeView.as_view(), name="api-me"),
    path("subjects", views.SubjectsView.as_view(), name="api-subjects"),
    path("usage", views.UsageView.as_view(), name="api-usage"),
]
