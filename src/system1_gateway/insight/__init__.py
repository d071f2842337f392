"""Insight from what coding agents already wrote down: Claude Code transcripts, read as a
stream (`transcripts`), for `system1 outcomes` now and `system1 report` next. Stdlib only."""
