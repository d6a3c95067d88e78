"""The webhooks app's pages in the dashboard's tenant section (``/tenant/<slug>/webhooks/``)."""
