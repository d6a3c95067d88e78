"""The memory app's pages in the tenant section, under the section's ``tenant`` names: atlas_site/urls.py
mounts them beside tenants.dashboard.urls."""

from django.urls import path

from . import tenant_views as views

urlpatterns = [
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
    path("<slug:slug>/catalog/", views.catalog_entries, name="catalog"),
    path("<slug:slug>/catalog/<str:entry_id>/", views.catalog_entry, name="catalog_entry"),
    path("<slug:slug>/catalog/<str:entry_id>/delete/", views.catalog_entry_delete, name="catalog_delete"),
    path("<slug:slug>/jobs/", views.job_runs, name="jobs"),
    path("<slug:slug>/usage/", views.usage, name="usage"),
]
