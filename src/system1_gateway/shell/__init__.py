"""Reading a shell command as a shell reads it, for the `destructive` built-in question.

`read.py` parses a command line with tree-sitter's bash grammar and lists every simple command
that would run (through lists, pipelines, subshells, substitutions, wrappers such as `sudo`,
shell strings such as `bash -c`, `find -exec`, inline interpreter code), each a `Part`;
what cannot be known from the text (a command name built at run time, decoded or downloaded
text fed to a shell, look-alike characters) is marked *opaque*. `policy.py` decides the parts
it knows from a reviewed table (`policy.json`, the `destructive@1` policy as rules);
`structure.py` asks the engine about the rest, one part at a time, and combines the answers
(the most destructive part decides; an opaque part makes the answer unsure).
"""
