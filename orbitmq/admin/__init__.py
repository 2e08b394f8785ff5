"""OrbitMQ admin package."""
