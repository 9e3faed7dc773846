"""The real Kubernetes control plane, built from its published Go modules (issue 14).

`versions` names the Kubernetes releases we pin and where their Go modules live (`controlplane/` at
the root of the source checkout: our own go.mod/go.sum only); `build` plans and runs `go build` of
kube-apiserver, kube-controller-manager, kube-scheduler, etcd and kubectl into a per-version cache directory
outside the repo; `cli` is `lwsconf controlplane ...`.
"""
