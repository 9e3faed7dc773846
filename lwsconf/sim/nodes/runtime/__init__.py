"""The container runtime: real processes for the containers the sim can run safely (a node's CRI side).

`runtime` (`ProcessRuntime`: which containers run as processes, how one is started, stopped and exec'd into, in
fresh namespaces as root or shimmed otherwise), `launcher` (the standard-library script that starts one container
process, run by file path), `imageruntimes` (a local install run in place of a container image, opt-in), and the
two interposers that give a process its pod's view: `pyshim/` (a `sitecustomize` put first on a Python process's
PYTHONPATH: binds, hosts file, hostname, paths) and `netshim/` (an LD_PRELOAD library for native code: binds, no
route off the loopback).

It may import no other node package. The kubelet hands it a `runtime.ContainerLaunch` (built by `kubelet.processes`)
and drives it through `kubelet.nodectx.Runtime`; the fleet builds it by name (importlib).
"""
