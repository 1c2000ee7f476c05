"""Sphinx configuration of the reference docs (MyST Markdown, the furo theme), built strictly in CI.

`.ci/run` builds them with ``-W --keep-going -n``: a broken cross-reference, a page left out of every
toctree or a heading anchor that does not exist fails CI, so the docs cannot rot silently.
"""

project = "harness"
author = "the harness's authors"
extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "**/.ipynb_checkpoints"]
myst_heading_anchors = 3  # `[text](page.md#a-heading)` links resolve (and are checked) to headings up to ###
myst_enable_extensions = ["colon_fence"]
html_theme = "furo"
html_title = "harness: load-test sync layers on DynamoDB and S3"
html_static_path: list[str] = []
suppress_warnings: list[str] = []
