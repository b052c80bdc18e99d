"""The bottom layer: errors, enums and the dtype table, parsing and formatting of quantities."""
