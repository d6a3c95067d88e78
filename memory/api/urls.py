"""Routes of the memory API (included under ``/api/v1/``)."""

from django.urls import path

from . import catalog_views, views

urlpatterns = [
    path("subjects/<str:subject>/episodes", views.EpisodesView.as_view(), name="api-episodes"),
    path("subjects/<str:subject>/turn", views.TurnView.as_view(), name="api-turn"),
    path("subjects/<str:subject>/facts", views.FactsView.as_view(), name="api-facts"),
    path("subjects/<str:subject>/facts/<str:memory_id>", views.FactView.as_view(), name="api-fact"),
    path("subjects/<str:subject>/playbooks", views.PlaybooksView.as_view(), name="api-playbooks"),
    path("subjects/<str:subject>/playbooks/<str:memory_id>/outcome", views.OutcomeView.as_view(), name="api-outcome"),
    path("subjects/<str:subject>/recall", views.RecallView.as_view(), name="api-recall"),
    path("subjects/<str:subject>/memories", views.MemoriesView.as_view(), name="api-memories"),
    path("subjects/<str:subject>/memories/<str:memory_id>", views.MemoryView.as_view(), name="api-memory"),
    path("subjects/<str:subject>/memories/<str:memory_id>/chain", views.ChainView.as_view(), name="api-chain"),
    path("subjects/<str:subject>/proposals", views.ProposalsView.as_view(), name="api-proposals"),
    path(
        "subjects/<str:subject>/proposals/<str:proposal_id>/accept",
        views.ProposalAcceptView.as_view(),
        name="api-proposal-accept",
    ),
    path(
        "subjects/<str:subject>/proposals/<str:proposal_id>/reject",
        views.ProposalRejectView.as_view(),
        name="api-proposal-reject",
    ),
    path("subjects/<str:subject>/export", views.ExportView.as_view(), name="api-export"),
    path("catalog", catalog_views.CatalogView.as_view(), name="api-catalog"),
    path("catalog/<str:entry_id>", catalog_views.CatalogEntryView.as_view(), name="api-catalog-entry"),
]
