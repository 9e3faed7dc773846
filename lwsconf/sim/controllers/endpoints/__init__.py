"""The EndpointSlice and Endpoints controllers: `endpointslice`, `endpoints`, and what they share,
`service_endpoints` (pods as endpoints of a Service). kube-proxy reads `service_endpoints` too.

May import `common`; never a controller of the top layer.
"""
