"""An exploration's page (``harness explore``): the violating schedules first, then the totals."""

from reports.explore.page import write_page

__all__ = ["write_page"]
