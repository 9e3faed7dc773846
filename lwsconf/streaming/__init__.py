"""The streaming protocols of `kubectl exec`, `attach` and `port-forward`, as the kubelet serves them.

Why: kubectl 1.37 no longer speaks SPDY first. It opens a WebSocket and, for exec and attach, speaks
the channel protocol `v5.channel.k8s.io` (one byte of channel id before each message; `v4` without the
close signal); for port-forward it tunnels a SPDY/3.1 session inside the WebSocket
(`SPDY/3.1+portforward.k8s.io`). kube-apiserver 1.36+ proxies these WebSockets to a kubelet whose Node
declares `ExtendWebSocketsToKubelet` (pkg/registry/core/pod/rest/subresources.go), so our node agents
serve the same protocols to the sim API server and to a real one. Pure protocol code, no I/O policy:

* `channels` - the channel protocol: channel ids, frames, the error channel's `Status` (exit codes);
* `options` - which streams a request asks for (kubelet and API-server query forms);
* `spdy/` - SPDY/3.1 frames, header blocks and a server session, enough for port-forward;
* `portforward` - the port-forward protocol over a SPDY session (error/data stream pairs);
* `portforward_channels` - port-forward as v4 channels, what the official Python client speaks.
"""
