// Package archtest holds tests that keep the module's shape true to
// docs/ARCHITECTURE.md: the import table there is compared, arrow for arrow,
// with what `go list` reports, and each outside library named in the design
// has exactly one importer. It has no non-test code of its own.
package archtest
