"""Questions: one module per analysis, each returning a result object of numbers for report/ to format."""
