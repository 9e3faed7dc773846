"""lwsconf: conformance and end-to-end harness for Kubernetes LeaderWorkerSet.

The public surface is small: the `lwsconf` command (`lwsconf.cli`), the simulated cluster's in-process
entry point (`lwsconf.sim.cluster.SimCluster`, over `lwsconf.sim.apiserver.http.app.APIServer`) and, as
later parts land, the pytest plugin and the report schema. Everything else is an implementation detail.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
