"""Metaflow flows and the plain modules they call.

Importing the package points Metaflow at the state folder before Metaflow itself is imported.
"""

from flows import metaflow_env  # noqa: F401
