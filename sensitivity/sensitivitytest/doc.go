// Package sensitivitytest holds profiles for tests of everything that reads
// one: a profile shaped like `make demo`'s, and a corpus of malformed
// profiles (each a named mutation of a good one, with the field its
// refusal must name) that every profile-reading command is tested against.
// It uses the standard library and sensitivity only.
package sensitivitytest
