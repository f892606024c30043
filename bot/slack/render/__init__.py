"""What the bot posts, made to fit Slack: mrkdwn escaping, the documented limits and
splitting, and Block Kit, which is built only in this package, one module per surface
(`blocks` lists them)."""
