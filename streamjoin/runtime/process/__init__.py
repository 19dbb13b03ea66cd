"""The worker process: options, clients, endpoints, the loop that runs tasks, its supervisor."""
