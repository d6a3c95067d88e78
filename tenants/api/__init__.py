"""The REST API's tenancy routes (``/api/v1/me``, ``/api/v1/subjects``): thin views over tenant services."""
