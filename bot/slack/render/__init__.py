"""What the bot posts, made to fit Slack: mrkdwn escaping, the documented limits and
splitting, and Block Kit (built only in `blocks.py`)."""
