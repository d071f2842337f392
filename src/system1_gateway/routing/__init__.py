"""Routing: the four features a prompt is read for, the tiers, the user's rule that maps one to
the other (`rule`), and the log the hooks keep of what they saw (`log`).

Stdlib only: the hooks import this on every prompt.
"""

FEATURES = ("read_only", "design", "review", "specified")  # the built-in questions the rule reads
TIERS = ("haiku", "sonnet", "opus")
