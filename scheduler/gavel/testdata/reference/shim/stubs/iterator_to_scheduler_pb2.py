"""Stub of iterator_to_scheduler_pb2 for running Gavel's simulator: see _gavelref_stub.py."""
from _gavelref_stub import module_getattr

__getattr__ = module_getattr(__name__)
