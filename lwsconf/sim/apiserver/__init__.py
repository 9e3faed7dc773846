"""The simulated Kubernetes API server (aiohttp), served on loopback with bearer-token auth.

Request flow: `app` (auth, body limits, routing) -> `handlers` (verbs) -> `admission` (defaulting,
schema, CEL, built-in validation) -> `store` (objects, resourceVersion, indexes) -> `watch` hub.
"""
