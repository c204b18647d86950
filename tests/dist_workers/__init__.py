"""Worker scripts run under mpiexec by tests/test_distributed.py (not collected by pytest)."""
