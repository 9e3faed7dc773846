"""What every namespace gets so that its pods can reach the API server: the `default` ServiceAccount
(`accounts`) and the `kube-root-ca.crt` ConfigMap (`rootca`), kube-controller-manager's serviceaccount and
root-ca-cert-publisher controllers, both on `per_namespace` (one object of a fixed name kept in every
namespace). The ServiceAccount admission plugin mounts both into every pod's `kube-api-access-*` volume;
without the ConfigMap a node could not fill that volume.

May import `lwsconf.kubeclient` only: no other controller, never the API server's objects."""
