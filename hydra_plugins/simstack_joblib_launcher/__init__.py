"""``hydra/launcher=joblib``: the jobs of a simstack sweep in joblib's processes, surviving a
lost worker.

hydra-joblib-launcher ran every job through one ``joblib.Parallel``: one worker killed (what
the out-of-memory killer does) ended the whole sweep with ``TerminatedWorkerError``, and the
jobs not yet run never ran. This launcher runs the same jobs the same way (its
``execute_job``, loky processes, the same ``hydra.launcher.*`` keys) and, when a worker is
lost, retries each job that was running then alone, records a job lost again as failed, and
runs the rest. It takes hydra-joblib-launcher's name and keys, and replaces that package
(which registers the same name: do not install both).
"""
