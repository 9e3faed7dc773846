"""The real upstream LeaderWorkerSet manager, built from its Go module and run out of cluster.

`versions` names the releases pinned by our Go modules under `upstream/` and parses what
`--lws-impl=upstream-local:...` may name (a release, or a local checkout); `source` asks `go` where a
release's files are (the module cache) and what its checksum is, or git what a checkout's commit is;
`build` runs `go build` of the manager through `lwsconf.controlplane.build`'s machinery into
~/.cache/lwsconf/lws/<version>/bin; `manifests` reads upstream's CRDs and webhook configurations from
those files; `manager` runs the binary against a cluster; `cli` is `lwsconf upstream ...`.
"""
