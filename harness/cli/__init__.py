"""The `harness` command line: arguments and the environment (read once) turned into a run plan or a product."""
