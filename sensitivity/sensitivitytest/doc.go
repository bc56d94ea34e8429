// Package sensitivitytest holds profiles for tests of everything that reads
// one: a profile shaped like `make demo`'s, and a corpus of malformed
// profiles (each a named mutation of a good one, with the field its
// refusal must name) that every profile-reading command is tested against;
// and readers of the export formats (synergy-grid, Slurm flags, the
// Kubernetes resources block) that the tests read the exports back with.
// It uses the standard library and sensitivity only.
package sensitivitytest
