"""The admission chain of the sim API server: defaulting and built-in validation, as kube-apiserver's
REST strategies and admission plugins run them.

`admission` orders the steps (`Admission.prepare`, `Admission.validate`): decoding checks and unknown fields
of built-in kinds (`builtin_fields`), defaulting (`defaults`, `defaults_pods`, batch/v1's in `batch`),
MutatingAdmissionPolicies, validation (`validation/`: `registry` keyed by (group, plural), one module per
API group), custom resources' schemas and CEL rules, then the ValidatingAdmissionPolicies.

May import `policies`, `protobuf`, `tables`, `patch`, `schema`, `storage` and `apimachinery`; never `http`.
No I/O here.
"""
