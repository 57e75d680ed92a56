"""``simstack serve``: an interactive what-if page for one model (``docs/serve.md``)."""
