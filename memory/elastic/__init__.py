"""The one gateway to the memory indices: documents (mappings), index names, query builders, the store,
bootstrap and maintenance. The connection, API keys and licence check are ``atlas_site.elastic``.

Nothing outside this package and ``atlas_site.elastic`` imports the ``elasticsearch`` client.
"""
