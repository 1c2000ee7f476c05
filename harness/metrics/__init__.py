"""The run's numbers, defined once: the rate, failure ratio, step shares and percentiles (``numbers``), lock use,
the bound rule, the machine as a resource.

Pure functions over rows; the report, the live web tab, the exporters and the gates read them here."""
