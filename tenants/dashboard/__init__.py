"""The tenant section of the dashboard: what a tenant's owners and admins manage (``/tenant/<slug>/``)."""
