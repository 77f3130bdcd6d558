"""Lineage across Dagster and Metaflow: OpenLineage events and one DataHub graph, per run and per version.

The public API, by module (importing the package itself loads nothing, so a Metaflow step that
records lineage does not pay for Dagster or DataHub):

- ``bridge.config``: ``LineageBridge``, ``SinkSpec``: what a project hands the bridge;
- ``bridge.sinks.contract``: ``Sink``, ``SinkConfig``: a sink kind of one's own (``bridge.sinks.registry``);
- ``bridge.translate.naming``: ``Naming``, ``IcebergTables``, ``GlueTables``: how datasets are named;
- ``bridge.translate.translator``: ``LineageTranslator``: a subclass renames jobs and datasets, adds facets;
- ``bridge.run.sensor``: ``lineage_sensor``: the bridge as a Dagster sensor;
- ``bridge.run.lineage_pass``: ``run_pass``: one pass, from anywhere;
- ``bridge.sources.metaflow_recorder``: ``record_lineage``, ``record_read``, ``record_write``,
  ``record_model``: in flows;
- ``bridge.cli.main``: ``main``: a project's lineage command.
"""
