// Package runner defines what a profiling point launches (Job), under which
// resource limits (Limits), and the Runner interface that the local cgroup
// runner (runner/local) and the Docker runner (runner/docker) implement. It
// also holds the pure helpers both share: cpuset and quota arithmetic and
// human-size parsing. It imports no cgroup or container library.
package runner
