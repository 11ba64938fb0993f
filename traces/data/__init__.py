"""Package data: the built-in traces shipped with specbed (see README.md here for attribution).

A regular package so that the files install with a normal (non-editable) install and are found
through `importlib.resources`. No code; imports nothing.
"""
