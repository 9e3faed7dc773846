"""The simulated Kubernetes API server (aiohttp), served on loopback with bearer-token auth.

One package per concept, in layers (`.importlinter`'s `apiserver-layers` checks that a package imports only
the packages below it):

* `http` - the HTTP layer: the aiohttp app, routing, verbs, subresources, watch, proxy, streams, TLS,
  the server's shared context, and the steps that call admission webhooks;
* `admission` - the admission chain: defaulting, built-in validation, unknown-field dropping;
* `policies` - ValidatingAdmissionPolicy, MutatingAdmissionPolicy and admission webhooks, with the
  defaults and validation of their own configuration kinds;
* `protobuf`, `tables` - Kubernetes protobuf encoding; `kubectl get` tables;
* `patch` - JSON, merge and strategic merge patches, server-side apply, managed fields;
* `schema` - CRD structural schemas, their CEL rules and registration, OpenAPI, discovery;
* `storage` - the object store, write semantics, the registry of served types, conversion;
* `apimachinery` - what every layer speaks: Status errors, object helpers, label selectors, field errors,
  name formats, ObjectMeta validation, quantities.

A request flows down: `http.app` -> `http.handlers` -> `admission` (and `policies`) -> `storage.storage`
-> `storage.store` -> `http.watch` fan-out.
"""
