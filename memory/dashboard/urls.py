from django.urls import path

from . import views

app_name = "dashboard"

urlpatterns = [
    path("", views.home, name="home"),
    path("memories/", views.memories, {"tab": "facts"}, name="memories"),
    path("memories/<slug:tab>/", views.memories, name="tab"),
    path("glance/", views.glance, name="glance"),
    path("memory/<str:memory_id>/", views.memory_detail, name="memory"),
    path("memory/<str:memory_id>/forget/", views.memory_forget, name="forget"),
    path("review/", views.review, name="review"),
    path("review/all/", views.review_all, name="review_all"),
    path("review/<str:proposal_id>/accept/", views.review_accept, name="review_accept"),
    path("review/<str:proposal_id>/reject/", views.review_reject, name="review_reject"),
    path("forget-everything/", views.forget_all, name="forget_all"),
    path("export.json", views.export, name="export"),
    path("export.jsonl", views.export_lines, name="export_lines"),
    path("connect/", views.connect, name="connect"),
    path("connect/<str:prefix>/revoke/", views.token_revoke, name="token_revoke"),
    path("profiles/", views.subjects, name="subjects"),
]
