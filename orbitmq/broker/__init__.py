"""OrbitMQ broker package."""
