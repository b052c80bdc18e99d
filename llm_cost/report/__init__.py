"""Renderers: one module per command turns a result object into Rich tables; ``base`` holds
the shared helpers and the JSON dump. Rendering never computes a figure."""
