"""Tasks and their scheduling: admission, event-time order, back-pressure, roles, global tables."""
