"""The job report: one self-contained HTML page (inline SVG) and its data as CSV."""
