"""OrbitMQ common package."""
