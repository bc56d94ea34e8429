// Package testreq lets tests that need the real thing (cgroups, blkio
// throttling, a Docker engine, NVML) skip with their reason on a machine
// that lacks it, while CI turns those skips into failures for what its
// machine kind has: SYNERGY_REQUIRE lists the features that must be there
// ("cgroup,blkio,docker" or "all").
package testreq

import (
	"os"
	"strings"
	"testing"
)

// EnvVar names the variable that turns skips into failures.
const EnvVar = "SYNERGY_REQUIRE"

// Required reports whether feature must be present in this run.
func Required(feature string) bool {
	for _, f := range strings.Split(os.Getenv(EnvVar), ",") {
		f = strings.TrimSpace(f)
		if f == feature || f == "all" {
			return true
		}
	}
	return false
}

// Skip skips the test because feature is missing, or fails it when
// SYNERGY_REQUIRE says the feature must be there.
func Skip(t testing.TB, feature, reason string) {
	t.Helper()
	if Required(feature) {
		t.Fatalf("%s required (%s=%s) but unavailable: %s", feature, EnvVar, os.Getenv(EnvVar), reason)
	}
	t.Skipf("%s unavailable: %s", feature, reason)
}
