"""The kubelet port: its HTTPS server, the endpoints it serves, who may call them, and the exec'd command.

`logserver` (`/containerLogs` with the kubelet's query parameters, and the server the other endpoints ride on),
`streamserver` (`/exec`, `/attach`, `/portForward` over WebSocket; the protocols are `lwsconf.streaming`'s),
`execsession` (a command run for `kubectl exec`: pipes or a terminal), `kubeletauth` (webhook authentication and
authorization of every caller, as a kubelet with `--anonymous-auth=false`), `kubelettls` (the port's self-signed
serving certificate).

It may import no other node package: the servers ask their owner through small interfaces (the log server's resolver,
the stream server's targets), which the kubelet answers (`kubelet.agentlogs`, `kubelet.agentstreams`).
"""
