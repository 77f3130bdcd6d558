"""Keep Metaflow's datastore, metadata, cards and client cache in the state folder.

Metaflow reads its configuration when it is first imported, so flow files import this module
before ``metaflow``. Values already in the environment (an S3 datastore in production) win.
"""

from forecast_assets.local_state import apply_tool_environment

apply_tool_environment()
