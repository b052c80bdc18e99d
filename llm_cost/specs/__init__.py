"""Specs: model and GPU schemas, reading spec files and Hugging Face config.json, shipped names."""
