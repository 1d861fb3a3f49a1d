"""The files here are PyTorch-style test files for tests/test_run_pytorch_tests.py,
which runs them through tools/run_pytorch_tests.py (whose children skip this
conftest: --noconftest). They crash, hang and fail on purpose, so `make test`
does not collect them."""

collect_ignore_glob = ["test_*.py"]
