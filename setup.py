"""Builds the compiled twins of OrbitMQ's hot loops (orbitmq/_speedups.c); everything else is in pyproject.toml.

The extension is optional: without a C compiler or zlib's headers the package installs and runs
on its pure-Python originals (orbitmq/speedups.py says which is in use).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "orbitmq._speedups",
            sources=["orbitmq/_speedups.c"],
            libraries=["z"],
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            optional=True,
        )
    ]
)
