"""Formatting-preserving rewrites of drifting enumerations."""
