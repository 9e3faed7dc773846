"""The kind node image, built offline (issue 31 item 7): `lwsconf kind node-image build`, `make kind-node-image`.

One concept: the image `kind create cluster --image lwsconf.local/kind-node:v<release>` starts its nodes from, made
on this machine from the same parts as real nodes (a Debian root filesystem from debootstrap, our kubelet, kubeadm,
kubectl, containerd, runc and CNI builds, the control-plane images from our binaries) plus kind's own node files,
read at build time from kind's Go module (pinned in nodes/kind) and never copied into this repository.

- `plan.py`: pure: what goes where in the image, its config (entrypoint, env, stop signal), the images preloaded
  into its containerd and the Docker archive's manifest.
- `build.py`: the I/O: the Go builds (kind, kubeadm), the root filesystem, the staged image root, the preload through
  our containerd, the archive and `docker load`.
- `cli.py`: `lwsconf kind node-image build`.

Never imports the simulator, the reconciler or pytest (`.importlinter`).
"""
