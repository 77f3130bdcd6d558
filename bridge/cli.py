"""`taxi-lineage`: one bridge pass without the Dagster daemon (for scripts, CI and the demo)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time

from bridge.bridge_pass import default_outbox, run_pass
from bridge.delivery import describe, make_client
from forecast_assets.local_state import dagster_home


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="taxi-lineage", description=__doc__)
    parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("DAGSTER_HOME", str(dagster_home()))
    from dagster import DagsterInstance

    from bridge.sources import sources_for

    started = time.monotonic()
    client = make_client()
    outbox = default_outbox()
    with DagsterInstance.get() as instance:
        result = run_pass(sources_for(instance), outbox, client)
    seconds = time.monotonic() - started
    queued = sum(result.queued.values())
    print(f"Lineage pass: {queued} new events ({dict(result.event_types)}) in {seconds:.1f} s")
    print(f"  per source: {result.queued}")
    print(f"  delivered {result.delivery.delivered} to {describe(client)}; {result.delivery.pending} still queued")
    if result.datahub is not None:
        print(f"  DataHub: {result.datahub.events} events as {result.datahub.aspects} aspects"
              + (f"; stopped: {result.datahub.error}" if result.datahub.error else ""))  # fmt: skip
    if result.untranslated:
        print(f"  {len(result.untranslated)} Dagster records could not be translated (storage ids in the log)")
    if result.delivery.error:
        print(f"  delivery stopped: {result.delivery.error} (queued events are retried on the next pass)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
