"""Reading and writing: domain files in (the loader and its limits), files out whole, the outcome log.

- :mod:`planner.io.loader`: parse and validate a domain file (JSON Schema, then meaning), with the
  limits on hostile input;
- :mod:`planner.io.atomic`: write a file, or a folder of files, whole or not at all;
- :mod:`planner.io.store`: the SQLite outcome log that sessions append to and calibration reads.
"""

__all__ = ["loader", "atomic", "store"]
