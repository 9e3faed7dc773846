"""Built-in validation of each kind, as kube-apiserver's strategies run it (pkg/apis/*/validation).

`registry` maps (group, plural) to the validator of each kind and holds the name rules; `core` (core/v1
kinds other than pods), `pods` and `containers`, `workloads` (apps/v1), `groups` (other API groups) and
`disruption` (policy/v1 PodDisruptionBudgets) hold the rules. Field errors, name formats and ObjectMeta come
from `apimachinery`. Part of `admission`; the same imports are allowed. No I/O here.
"""
