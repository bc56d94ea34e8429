# Shared by scripts/local-k8s.sh and scripts/local-slurm.sh (sourced; they
# define log).

# stop_daemon NAME PID PIDFILE: TERM, up to 10 s, then KILL; then remove
# PIDFILE. An empty PID means NAME is not running.
stop_daemon() {
  local name="$1" pid="$2" pidfile="$3"
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "$name (pid $pid) did not stop in 10 s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    log "stopped $name (pid $pid)"
  fi
  rm -f "$pidfile"
}
