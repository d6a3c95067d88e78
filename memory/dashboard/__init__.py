"""The end users' dashboard: a person sees, searches, corrects and forgets what agents remember about them."""
