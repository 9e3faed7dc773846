"""The node side of the simulated cluster: node agents (kubelets), their runtime and device manager."""
