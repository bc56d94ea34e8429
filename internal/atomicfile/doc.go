// Package atomicfile writes files so that a reader sees either the old
// content or the whole new one, never half of it: the data goes to a
// temporary file in the destination's directory, which is synced, given
// its permissions and renamed over the destination. A failed write removes
// the temporary file and leaves the destination as it was. It imports the
// standard library only, so sensitivity (stdlib-only) may use it.
package atomicfile
