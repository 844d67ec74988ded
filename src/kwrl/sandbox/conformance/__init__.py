"""The conformance zone: does an environment run kwrl trials as the sandbox contract says?

- `suite`: `kwrl sandbox conform` (real harbor trials of generated and hand-made tasks in the
  environment under test, one line per check);
- `testing`: the kit the suite, the tests, the soak and the benchmarks share: tiny hand-made
  datasets, the attack agents and probes (writes outside the writable mounts, planted loaders,
  floods, escapes), and the checks of what a trial left on the host (`host_file_breach`,
  `inode_breach`, leaks).
Nothing here runs in a user's trial: it drives environments from the outside.
"""
