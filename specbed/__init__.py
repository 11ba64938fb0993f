"""The `specbed` command line: a thin dispatcher over the packages' own CLIs."""
