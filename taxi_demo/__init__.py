"""The demo around the product: a sample source in the public formats, a local cluster, and the `taxi` command
that runs it all. The product packages never import it."""
