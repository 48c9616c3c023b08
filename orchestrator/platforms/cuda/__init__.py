"""CUDA (placeholder: the platform folder comes from another branch)."""
