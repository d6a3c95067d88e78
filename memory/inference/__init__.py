"""The model code: embeddings, language checks, reranking and the pool their inferences share (STRUCTURE.md)."""
