"""The connection to Elasticsearch both apps share: the client factory and its error mapping (``client``),
API keys and the role each kind carries (``keys``), and the licence check that decides whether document
level security isolates tenants (``licence``). The memory indices themselves live in ``memory.elastic``.

Nothing outside ``atlas_site.elastic`` and ``memory.elastic`` imports the ``elasticsearch`` client.
"""
