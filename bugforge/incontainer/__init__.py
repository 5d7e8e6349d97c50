"""Code that runs inside containers, under the image's Python (3.9+): the pytest probe, the test server,
the syntax-tree helpers both sides share, and the file helper. No bugforge imports and no newer syntax:
it is copied into every container as the package `bugforge_incontainer` (bugforge.testing.tools)."""
