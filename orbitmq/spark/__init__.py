"""OrbitMQ spark package."""
