"""The knowledge base shipped with the bot: a small sample to replace with your own."""

from pathlib import Path

SAMPLE_DIR = Path(__file__).with_name("sample")
