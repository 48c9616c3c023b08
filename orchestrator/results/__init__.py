"""Results: statistics, comparisons of run groups, the report and the webhook."""
