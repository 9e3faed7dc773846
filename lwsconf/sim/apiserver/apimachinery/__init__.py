"""What every layer of the sim API server speaks, as k8s.io/apimachinery is to kube-apiserver.

`errors` (Status errors with kube-apiserver's codes and reasons), `objects` (timestamps, uids, generated
names), `label_parser` and `selectors` (label and field selectors), `fields` (field errors worded as
`field.Error` renders them, safe JSON accessors), `names` (name, key and value formats), `meta` (ObjectMeta
and label selector validation), `quantity` (resource quantities as exact fractions).

The bottom layer: imports no other package of the API server. No I/O here.
"""
