"""Summarization jobs: the service that runs them, the queue that hands them to workers, and the
progress they report to whoever watches."""
