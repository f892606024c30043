"""The LLM agent: its step (model, tools, transfer), instruction templates, transfer and
streaming; `decide_first/` holds how a step reaches a model by its profile (the
decide-first choice for models without native tool calling, and the pretend-action check)."""
