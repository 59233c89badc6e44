"""Shared hypothesis strategies for the boundary probes in ``tests/probes``."""
