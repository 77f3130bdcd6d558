"""Keep Metaflow's local datastore and metadata in the state folder.

Metaflow reads its configuration when it is first imported, so flow files import this module
before ``metaflow``. Values already in the environment (an S3 datastore in production) win.
"""

import os

from forecast_assets.settings import state_path

os.environ.setdefault("METAFLOW_DEFAULT_DATASTORE", "local")
os.environ.setdefault("METAFLOW_DEFAULT_METADATA", "local")
if os.environ["METAFLOW_DEFAULT_DATASTORE"] == "local":
    os.environ.setdefault("METAFLOW_DATASTORE_SYSROOT_LOCAL", str(state_path("metaflow")))
# Metaflow refuses to run without a user name; CI and containers often have none.
os.environ.setdefault("METAFLOW_USER", os.environ.get("USER") or os.environ.get("USERNAME") or "taxi")
