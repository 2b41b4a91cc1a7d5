"""What the tests and the benchmarks share, outside both (neither imports the other): the
fake LLM provider server, wasm module builders, a Go pclntab-like module, KB builders.
Not part of the installed package."""
