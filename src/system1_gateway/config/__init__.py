"""The configuration, in four modules; this package imports nothing itself (the short-lived
path imports `file` and `tables` and must not pay for `settings`).

  settings.py  the TOML file and the environment → the validated `Config` (pydantic), with errors
               that name the file, line and key: `load_config`, `parse_config_text`
  file.py      the config file as the short-lived path reads it, parsed once per change (a JSON
               cache), stdlib only
  tables.py    the hooks' tables ([routing] [skills] [guard]) and the one notion of a boolean
               setting (`autostart`), stdlib only; settings.py validates the same tables
  edit.py      changes written into the file: `system1 order`, the routing mode
"""
