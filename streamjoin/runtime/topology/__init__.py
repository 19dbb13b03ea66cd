"""From an app to tasks: task ids, the stores and processor of each, start-up topic checks."""
