"""Managed fields as kube-apiserver records them: who set which field, on every write.

kube-apiserver runs each create, update and non-apply patch through its field manager
(k8s.io/apimachinery/pkg/util/managedfields/internal, on sigs.k8s.io/structured-merge-diff): the fields the
write added or changed, compared with the live object (an empty object of the kind for a create), become the
writer's `Update` entry. The package has three parts, each with one job:

* `types`: what the schema says about a field (granular or atomic struct/map, associative list and its keys,
  set, atomic list), for built-in kinds from the struct facts of `merge_patches` plus the list and struct
  markers they lack, for custom resources from the CRD's structural schema; and the empty object of each
  built-in kind that a create is compared with.
* `compare`: structured-merge-diff's comparison of two objects into added, modified and removed fields.
* `entries`: updating `metadata.managedFields` for one write (merging per manager, operation, apiVersion and
  subresource, taking changed fields away from the other entries, dropping empty ones).

Server-side apply keeps its merge in `apply`, which reads `types` for its field sets and `compare` for its
conflicts. Part of `patch`, with the same imports. No I/O here.
"""
