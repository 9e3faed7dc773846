"""Server-side `meta.k8s.io/v1` Tables for `kubectl get`: `tables` renders them (and custom resources'
printer columns), `columns` holds the columns of built-in kinds,
`cells` the `Column` type and the cell helpers both use.

May import `patch`, `schema`, `storage` and `apimachinery`. No I/O here.
"""
