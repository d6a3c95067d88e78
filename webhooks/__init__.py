"""Webhooks: tenant admins' endpoints that are told, signed and in order, when memory changes."""
