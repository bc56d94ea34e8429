// Package vmtest runs test commands in the cgroup v2 + systemd virtual
// machine that scripts/local-vm.sh starts: Debian bookworm with systemd as
// PID 1, the unified hierarchy with every controller, and this repository
// mounted at the same absolute path as on the host, so a binary built here
// runs there by its own path. Commands run as root in an ssh login
// session, so in a session scope (user.slice/user-0.slice/session-N.scope)
// as on a systemd host. A test calls Need, which skips when the VM is not running,
// or fails under SYNERGY_REQUIRE=cgroupv2 (internal/testreq).
package vmtest
