"""OrbitMQ client package."""
