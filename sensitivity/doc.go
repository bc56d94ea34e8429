// Package sensitivity owns a job's throughput-versus-CPU-and-memory matrix:
// the versioned profile JSON the profiler writes (Profile, Cell), the grid
// form the scheduler reads (Matrix), and fitting, validation and exports.
// It uses the standard library only, and of synergy only the stdlib-only
// leaves internal/atomicfile (Save writes a profile atomically),
// internal/safefile (Load reads a regular file of at most MaxProfileBytes)
// and internal/units.
package sensitivity
