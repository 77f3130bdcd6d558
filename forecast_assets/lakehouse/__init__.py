"""The Iceberg lakehouse: catalog settings, Spark session configuration and table writes."""
