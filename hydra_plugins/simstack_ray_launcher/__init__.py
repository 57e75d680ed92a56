"""``hydra/launcher=ray``: run the jobs of a simstack sweep as Ray tasks.

Found by Hydra's plugin discovery (the ``hydra_plugins`` namespace package), like
``hydra_joblib_launcher``. Ray is imported only when a sweep is launched, so the plugin
costs nothing to the runs that do not use it.
"""
