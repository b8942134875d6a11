"""The app's foundations, shared by every slice: settings, the database and its migrations, errors
and the one handler for them, security headers, keys, CSRF, logs, metrics, the states of jobs
and drafts."""
