"""Slack's AI-app surface: the assistant panel, its loading status, and feedback buttons."""
