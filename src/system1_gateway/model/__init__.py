"""The canonical model: what a request and a result are, one definition each. Importing this
package runs nothing (the hooks import `builtins` and `errors` on the short-lived path).

* `requests` — the request models (judge, decide, questions): validation and JSON Schemas from
  one definition;
* `results` — the result models, the output JSON Schemas; `schemas` — portable JSON Schemas;
* `builtins` — the built-in questions: ids, canonical texts, versions, wording hash (stdlib only);
* `render` — deterministic text for structured instructions and state;
* `errors` — error codes and the exceptions that carry them.
"""
