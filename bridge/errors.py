"""The bridge's one error hierarchy: every error it raises on purpose is a :class:`BridgeError` whose message
names the thing (a file, a target, a node, a code location) and what to do about it.

Each keeps the built-in kind it is (``LookupError`` for something not found, ``ValueError`` for a bad
setting), so callers may catch either.
"""


class BridgeError(Exception):
    """An error of the lineage bridge; the message names the thing and the fix."""
