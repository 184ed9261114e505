"""`tandem bench`: the article's table of speedups per task type, measured side by side on our fixtures."""
