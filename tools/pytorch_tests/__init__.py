"""The code of tools/run_pytorch_tests.py (see README.md here)."""
