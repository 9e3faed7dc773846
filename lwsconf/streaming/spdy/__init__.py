"""SPDY/3.1, the part kubectl port-forward uses, server side.

kubectl 1.31+ tunnels a SPDY/3.1 session inside a WebSocket (`SPDY/3.1+portforward.k8s.io`,
client-go tools/portforward/tunneling_connection.go: the WebSocket's binary messages are simply the
bytes of the SPDY connection, message boundaries mean nothing). The client (moby/spdystream) opens
streams with SYN_STREAM and waits for SYN_REPLY, sends DATA (FIN on close), RST_STREAM on reset, and a
PING every 10 s that the server echoes; it sends no flow-control WINDOW_UPDATEs we must honour.

* `headers` - name/value header blocks and their zlib compression with the SPDY/3 dictionary;
* `frames` - the frame layouts (draft-mbelshe-httpbis-spdy-00, section 2), encoder and incremental reader;
* `session` - one server-side connection: streams, replies, pings, resets.
"""
