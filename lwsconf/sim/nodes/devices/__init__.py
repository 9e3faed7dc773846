"""The kubelet's device manager (`devicemanager`): device plugins register over the v1beta1 gRPC API on
`kubelet.sock`, the node advertises what they report, pods get device IDs and the plugin's envs.

It may import no other node package. Its gRPC stubs are `lwsconf.deviceplugin`'s, the one declared exception of
`.importlinter`'s `parts-independent`. The fleet builds a device manager by name (importlib, only for a node with
devices) and hands it to an agent, which drives it through `kubelet.nodectx.DeviceManager`.
"""
