"""Testing tools for streamjoin apps: run joins in-process, without a broker."""

from streamjoin.testing.driver import OutputRecord, TestDriver

__all__ = ("OutputRecord", "TestDriver")
