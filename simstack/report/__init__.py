"""Self-contained HTML reports: one page function shared by the sweep report and the
facility reports, and the sweep report's figures."""

from simstack.report.page import Table, page

__all__ = ["Table", "page"]
