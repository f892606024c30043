"""The LLM agent: its step (model, tools, transfer), instruction templates, transfer targets,
the decide-first choice for models without native tool calling, and the pretend-action check."""
