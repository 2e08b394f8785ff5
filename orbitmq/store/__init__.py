"""OrbitMQ store package."""
