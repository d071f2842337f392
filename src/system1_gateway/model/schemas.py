"""Portable JSON Schemas: what pydantic generates, minus its vendor keywords.

Pydantic writes OpenAPI's `discriminator` (with its `mapping`) next to the `oneOf` of a
tagged union. It is not a JSON Schema keyword, and strict validators (Ajv in strict mode,
used by several TypeScript MCP clients) refuse to compile a schema that carries one. The
`oneOf` alone says the same thing here: every branch requires `type` with its own values,
so exactly one branch can match.
"""

from __future__ import annotations

from typing import Any

# Every keyword of JSON Schema 2020-12 (core, applicator, unevaluated, validation,
# meta-data, format-annotation and content vocabularies).
STANDARD_KEYWORDS = frozenset({
    "$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary", "$comment", "$defs",
    "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "prefixItems", "items",
    "contains", "properties", "patternProperties", "additionalProperties", "propertyNames",
    "unevaluatedItems", "unevaluatedProperties",
    "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains", "minContains",
    "maxProperties", "minProperties", "required", "dependentRequired",
    "title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples",
    "format", "contentEncoding", "contentMediaType", "contentSchema",
})
VENDOR_KEYWORDS = frozenset({"discriminator"})

# Keywords whose value is a map from names (not keywords) to subschemas.
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "dependentSchemas"})
# Keywords whose value is a subschema or a list of subschemas.
_SUBSCHEMAS = frozenset({
    "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "prefixItems", "items", "contains",
    "additionalProperties", "propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema",
})


def _subschemas(schema: dict[str, Any]):
    """(keyword path, subschema) for every schema nested directly in `schema`."""
    for key, value in schema.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            for name, sub in value.items():
                yield f"{key}/{name}", sub
        elif key in _SUBSCHEMAS:
            for i, sub in enumerate(value if isinstance(value, list) else [value]):
                yield (f"{key}/{i}" if isinstance(value, list) else key), sub


def portable(schema: Any) -> Any:
    """A copy of `schema` without vendor keywords, at every depth (property names untouched)."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in VENDOR_KEYWORDS:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: portable(sub) for name, sub in value.items()}
        elif key in _SUBSCHEMAS:
            out[key] = [portable(v) for v in value] if isinstance(value, list) else portable(value)
        else:
            out[key] = value  # a keyword's value (enum, const, default, required…) is data, not schema
    return out


def nonstandard_keywords(schema: Any, path: str = "#") -> list[str]:
    """Where `schema` uses a keyword JSON Schema 2020-12 does not define ("#/…: keyword")."""
    if not isinstance(schema, dict):
        return []
    found = [f"{path}: {key}" for key in schema if key not in STANDARD_KEYWORDS]
    for where, sub in _subschemas(schema):
        found += nonstandard_keywords(sub, f"{path}/{where}")
    return found
