"""Tandem: a local code-completion language server with adaptive speculative decoding."""
__version__ = "0.2.0"
