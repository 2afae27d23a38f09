"""The semantic model rules read instead of guessing within one statement or one function.

- `effects`: what calling a function does, summarised once per function and resolved across
  the files of a run: whether it synchronises with the engine, which networks it hybridizes
  or returns hybridized, whether its network calls run outside the recorded graph.
- `program`: which files are programs (entry points) and which are modules other files import.
"""
