"""The REST API agents use (``/api/v1/``): thin DRF views over the memory services."""
