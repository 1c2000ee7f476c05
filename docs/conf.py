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


def _readme_links(app, relative_path, parent_docname, content) -> None:
    """The README, included whole as the site's `readme` page: its link to CONTRIBUTING.md (a file at the
    repository's root, which GitHub shows) leads to the site's own `contributing` page, which includes it."""
    if parent_docname == "readme" and str(relative_path).endswith("README.md"):
        content[0] = content[0].replace("](CONTRIBUTING.md)", "](contributing.md)")


def setup(app):
    app.connect("include-read", _readme_links)
    return {"parallel_read_safe": True}
