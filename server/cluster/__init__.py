"""Several replicas of the server on shared engines: reload announcements, heartbeats, the config hash."""
