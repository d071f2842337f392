"""System-1 routing rule: which Claude model tier a task needs, from four yes/no features.

This file is yours. The routing hook copied it to ~/.config/system1/routing_rule.py (next to
config.toml) the first time it ran; edit it there and the next prompt uses your version.
Keep it fast and side-effect free: it runs once per prompt and once per subagent spawn.

`tier(features)` returns a tier: "haiku", "sonnet", "opus" or "fable" (cheapest first), or a
dict that says more, for `[routing] mode = "set"` (the Agent hook sets the subagent's model):
  {"model": "haiku", "effort": "low"}          effort: "low", "medium", "high", "xhigh" or "max"
  {"model": "opus", "override_explicit": True}  also replace a model the orchestrator chose
Anything else (or an exception) keeps the hooks silent (`--explain` shows why).

`features` maps each built-in routing question to True (yes) or False (no):
  read_only  only read, explain, inspect, review or advise: no file changes
  design     architectural or design work: structure, interfaces, trade-offs
  review     review or critique existing code or a change
  specified  clear what to do and where, without a clarifying question
"""


def tier(features):
    if features["design"]:
        return "opus"      # structural decisions are where the strongest model pays off
    if not features["specified"] and not features["read_only"]:
        return "opus"      # a vague change: the subagent must work out what is wanted
    if features["review"]:
        return "sonnet"    # judging code needs care even though it writes nothing
    if features["read_only"]:
        return {"model": "haiku", "effort": "low"}  # lookups and explanations: no long thinking
    return "sonnet"        # a clear, local change
