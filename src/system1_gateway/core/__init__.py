"""The one core every face calls. Importing this package runs nothing.

* `gateway` — `Gateway`: the entry points (judge, decide, reports): validate → chain → check →
  calibrate → threshold → audit;
* `chain` — the rungs (provider instances) a request walks under one deadline, cooldowns, attempts;
* `structured` — built-in questions whose evidence the gateway reads first (`destructive` of a
  command, read in parts by `shell/`);
* `answer_check` — whether what a provider returned is an answer; canonical confidence, abstention;
* `calibration` (+ `calibration.json`, the shipped fits) — one temperature per (provider, model,
  question), before the threshold;
* `overrides` — a per-request chain (`--chain`, `?chain=`): the rungs a call may name;
* `consent` — billing consent records, checked where the chain runs;
* `audit` — the one line per request in audit.jsonl;
* `reports` — health, capabilities, status: reports about the gateway rather than answers.
"""
