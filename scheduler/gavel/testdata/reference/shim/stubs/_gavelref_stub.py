"""Stand-ins for modules that Gavel's simulator imports but never calls.

Our own code (synergy project).  Gavel's scheduler.py imports
runtime.rpc.{scheduler_server,scheduler_client} (gRPC plus the protobuf
modules that Gavel's `make rpc_stubs` generates) and matrix_completion (used
only by the throughput estimator, i.e. packed policies with profiling).  In
simulation none of them is called: the server thread and RPC clients start
only when simulate=False, and the estimator only when a packing policy runs
with --profiling_percentage < 1 or fewer reference models.  Every name
looked up on a stub is a class, so a module can subclass it at import time;
using one for real raises RuntimeError naming it.
"""


class _StubMeta(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _make(cls.__name__ + "." + name)


def _make(name):
    def _fail(*args, **kwargs):
        raise RuntimeError("%s: stub (gavelref shim); the simulation path "
                           "must not call it" % name)

    return _StubMeta(name, (object,), {"__init__": _fail, "__call__": _fail})


def module_getattr(modname):
    def __getattr__(name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _make(modname + "." + name)

    return __getattr__
