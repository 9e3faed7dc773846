"""What objects look like: CRD structural schemas and their CEL rules, CRD registration, OpenAPI, discovery.

`schema` (structural schemas: pruning, defaults, types) and `schema_check` (their checks when a CRD is
written), `cel` (a CRD's `x-kubernetes-validations`) over `cel_ext` (the Kubernetes CEL library, which the
admission policies use too), `crds` (a CRD becomes served types and gets its status), `openapi`,
`openapi_builtin` and `openapi_cache` (the `/openapi/v2` and `/openapi/v3` documents), `discovery`.

May import `storage` and `apimachinery`. No I/O here except `openapi_cache` (the local document cache).
"""
