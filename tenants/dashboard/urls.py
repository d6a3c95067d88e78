from django.urls import path

from . import views

app_name = "tenant"

urlpatterns = [
    path("<slug:slug>/", views.overview, name="overview"),
    path("<slug:slug>/subjects/", views.subjects, name="subjects"),
    path("<slug:slug>/subjects/<str:external_id>/", views.subject, name="subject"),
    path("<slug:slug>/subjects/<str:external_id>/deactivate/", views.subject_deactivate, name="subject_deactivate"),
    path("<slug:slug>/subjects/<str:external_id>/memories/", views.subject_memories, name="subject_memories"),
    path(
        "<slug:slug>/subjects/<str:external_id>/memories/<str:memory_id>/",
        views.subject_memory,
        name="subject_memory",
    ),
    path(
        "<slug:slug>/subjects/<str:external_id>/memories/<str:memory_id>/chain/",
        views.subject_memory_chain,
        name="subject_memory_chain",
    ),
    path("<slug:slug>/subjects/<str:external_id>/proposals/", views.subject_proposals, name="subject_proposals"),
    path("<slug:slug>/settings/", views.tenant_settings, name="settings"),
    path("<slug:slug>/catalog/", views.catalog_entries, name="catalog"),
    path("<slug:slug>/catalog/<str:entry_id>/", views.catalog_entry, name="catalog_entry"),
    path("<slug:slug>/catalog/<str:entry_id>/delete/", views.catalog_entry_delete, name="catalog_delete"),
    path("<slug:slug>/tokens/", views.tenant_tokens, name="tokens"),
    path("<slug:slug>/tokens/<str:prefix>/revoke/", views.tenant_token_revoke, name="token_revoke"),
    path("<slug:slug>/members/", views.members, name="members"),
    path("<slug:slug>/members/remove/", views.member_remove, name="member_remove"),
    path("<slug:slug>/audit/", views.audit, name="audit"),
    path("<slug:slug>/jobs/", views.job_runs, name="jobs"),
]
