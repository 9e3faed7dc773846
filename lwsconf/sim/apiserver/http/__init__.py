"""The HTTP layer of the sim API server: everything that knows about aiohttp, requests and responses.

`app` (TLS, bearer token, body limits, the journal, routes), `routing` (path -> `Target`), `handlers` (the
writing verbs), `reads` (get, list), `subresources` (status, scale, binding, eviction with `eviction`'s
PodDisruptionBudget rules, finalize, log, proxy, exec/attach/port-forward through `streams` and `proxy`),
`watch`, `context` (the server's shared state), `decoding` (the object a request carries), `params` (query
parameters and write options), `protobuf_http` (protobuf answers), `hooks` (kind-specific side effects of
writes: CRDs, Services), `reviews` (self-subject reviews, never stored), `webhook_steps` (where the handlers
call the admission webhooks), `tls` and `kubeconfig`.

The top layer: it may import every other package of the API server; none of them imports it.
"""
