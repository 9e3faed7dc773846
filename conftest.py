"""Root conftest: loads the lwsconf pytest plugin (options, cluster and namespace fixtures)."""

pytest_plugins = ["fixtures.plugin"]
