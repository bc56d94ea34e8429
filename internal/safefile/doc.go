// Package safefile opens the files that synergy, running as root, reads and
// writes in places other users may write to, so that nobody who can write
// such a directory turns it: a file is created afresh relative to a
// directory opened without following symlinks (Dir), never opened through
// a planted symlink or truncated when it was not made by this run, and a
// file read is a regular file of a bounded size (ReadFile, Open), refused
// with an error naming the file and the bound before it is read. What such
// a file says is then held to the same suspicion: NoDuplicateKeys refuses
// a JSON object that gives a key twice, TextProblem a name that is too long
// or holds control or bidirectional-text characters.
// docs/security.md says what each caller trusts.
package safefile
