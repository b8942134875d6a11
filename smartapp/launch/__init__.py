"""The SMART App Launch: discovery and the OAuth flow, pending launches and sessions, the EHR's
tokens (refreshed under a lock shared by every process), the EHR's style."""
