"""The one gateway to Elasticsearch: client factory, API keys, documents, bootstrap, licence.

Nothing outside this package imports the ``elasticsearch`` client.
"""
