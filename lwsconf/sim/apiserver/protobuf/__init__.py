"""Kubernetes protobuf for the sim API server's built-in kinds (`application/vnd.kubernetes.protobuf`).

controller-runtime (upstream LWS's manager) and kubectl speak protobuf for built-in kinds, so the sim
answers and reads it as kube-apiserver does. One job per module:

* `generate` - `lwsconf protobuf generate`: the committed schema (`schema/k8s.binpb`, a descriptor set
  compiled from the k8s.io modules' `generated.proto`, and `schema/gofields.json`, the Go struct facts
  via `gostructs`); the only part that needs Go and grpcio-tools;
* `schema` - loads them: message classes, (apiVersion, kind) -> message;
* `codec` - JSON-shaped dicts <-> messages, descriptor-driven;
* `envelope` - the `k8s\\0` + `runtime.Unknown` body and the length-prefixed watch frames;
* `negotiation` - which of JSON and protobuf a request sends and accepts.

All pure (no aiohttp): the HTTP layer (`http.app`, `http.context`, `http.watch`) calls them, and `admission`'s
unknown-field check reads the Go struct facts. May import `patch` (strategic merge facts) and the layers below
it; never `http`, `admission` or `policies`.
"""
