"""The model code (STRUCTURE.md): embeddings (``provider`` the interface, ``query_cache``, ``local_models``,
``openai_embeddings`` the OpenAI-compatible client, ``pool`` the threads their inferences share,
``embeddings`` the configured providers), ``mpnet`` and ``onnx_session`` under the local models,
``language_detection``, ``rerank`` and ``llm`` (the chat client consolidation uses)."""
