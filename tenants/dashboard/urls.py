"""The tenant section's own pages; atlas_site/urls.py mounts them under the ``tenant`` namespace, beside the
memory app's pages of the same section."""

from django.urls import path

from . import views

urlpatterns = [
    path("<slug:slug>/", views.overview, name="overview"),
    path("<slug:slug>/subjects/", views.subjects, name="subjects"),
    path("<slug:slug>/subjects/<str:external_id>/", views.subject, name="subject"),
    path("<slug:slug>/subjects/<str:external_id>/deactivate/", views.subject_deactivate, name="subject_deactivate"),
    path("<slug:slug>/settings/", views.tenant_settings, name="settings"),
    path("<slug:slug>/tokens/", views.tenant_tokens, name="tokens"),
    path("<slug:slug>/tokens/<str:prefix>/revoke/", views.tenant_token_revoke, name="token_revoke"),
    path("<slug:slug>/members/", views.members, name="members"),
    path("<slug:slug>/members/remove/", views.member_remove, name="member_remove"),
    path("<slug:slug>/audit/", views.audit, name="audit"),
]
