"""OrbitMQ namesrv package."""
