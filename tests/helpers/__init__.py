"""Test helpers that run in processes of their own (conftest.py holds the rest)."""
