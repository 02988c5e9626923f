"""Rendering findings: text, JSON, SARIF and GitHub annotations."""
