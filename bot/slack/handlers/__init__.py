"""The bot's Slack handlers, one module per surface, each a method of a small class
built with its collaborators; `bot.slack.listeners` registers them all in one place."""
