"""Every way a write can be a patch: JSON patch, merge patch, strategic merge patch and server-side apply.

`patch` picks by media type and applies JSON patches, `merge_patches` does merge and strategic merge
patches (with the Go struct facts of built-in kinds), `apply` server-side apply and its conflicts,
`yaml_bodies` YAML bodies read as go-yaml reads them, `fieldmanager/` the `metadata.managedFields` every
write updates.

May import `schema`, `storage` and `apimachinery`. No I/O here.
"""
