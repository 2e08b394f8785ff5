"""OrbitMQ remoting package."""
