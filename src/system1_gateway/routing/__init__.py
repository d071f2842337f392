"""Routing: the four features a prompt is read for, the tiers, the user's rule that maps one to
the other (`rule`), the log the hooks keep of what they saw (`log`), and the record that lets
the Agent hook set models (`gate`).

Stdlib only: the hooks import this on every prompt.
"""

FEATURES = ("read_only", "design", "review", "specified")  # the built-in questions the rule reads
TIERS = ("haiku", "sonnet", "opus", "fable")  # cheapest first: the Agent tool's `model` aliases
EFFORTS = ("low", "medium", "high", "xhigh", "max")  # the Agent tool's `effort` values
MODES = ("log", "hint", "set")  # [routing] mode: record only, add the hint line, set subagent models
