// Package sensitivity owns a job's throughput-versus-CPU-and-memory matrix:
// the versioned profile JSON the profiler writes (Profile, Cell), the grid
// form the scheduler reads (Matrix), and fitting, validation and exports.
// It uses the standard library only, and of synergy only the stdlib-only
// leaf internal/atomicfile (Save writes a profile atomically).
package sensitivity
