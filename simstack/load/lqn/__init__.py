"""Layered queueing network models (LQNS/lqsim's ``.lqnx`` XML and ``.lqn`` text) in and out.

An LQN file is read as data into frozen dataclasses (``lqn_model``), converted to a simstack
model document (``to_simstack``) and written as a model folder; a loaded simstack model is
written back as ``.lqnx`` where it maps (``from_simstack``). See docs/lqn.md.
"""
