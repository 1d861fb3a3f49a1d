"""libaccinte runtime tests (a package, so its test_*.py names cannot clash with tests/test_*.py)."""
