"""One small typed function per SQL function, shared by the CLI, the service and evaluation."""
