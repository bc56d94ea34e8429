#!/usr/bin/env bash
# A real cgroup v2 + systemd host for tests, as a qemu virtual machine: Debian
# bookworm with systemd as PID 1 and the unified hierarchy, the repository
# shared into it by 9p at the same absolute path as here, root reachable by
# ssh on a local port only. For tests that need what this host lacks (CI's
# host is cgroup v1 hybrid without systemd); internal/vmtest runs commands in
# it. Needs root; runs on KVM where /dev/kvm can run Debian's kernel, else
# on qemu's emulator (SYNERGY_VM_ACCEL=auto, kvm or tcg; see set_accel).
# docs/vm.md says what it costs.
#
#   scripts/local-vm.sh start           # idempotent: builds once, boots, mounts the repo
#   scripts/local-vm.sh status          # exit 0 when up and answering ssh, else 1 (3: not started)
#   scripts/local-vm.sh exec CMD [ARG...]  # run CMD as root in the VM (an ssh login session)
#   scripts/local-vm.sh stop            # idempotent: poweroff, then kill; drops the overlay
#
# start installs what is missing of qemu-system-x86, qemu-utils, mmdebstrap,
# openssh-client and e2fsprogs (apt), then builds, once per recipe (a hash of
# everything below that shapes the image), under $SYNERGY_VM_CACHE
# (/var/cache/synergy/vm): an mmdebstrap rootfs made into a raw ext4 image,
# the kernel and initrd copied out of it, and root's ssh key. Each start boots
# that image through a qcow2 overlay (dropped by stop: the image stays
# pristine) with slirp networking whose only forward is 127.0.0.1:PORT to the
# guest's port 22; the guest cannot reach the network (restrict=on). State
# (pid, port, overlay, serial log) is in $SYNERGY_VM_CACHE/run. Size:
# SYNERGY_VM_CPUS (2), SYNERGY_VM_MEM_MB (3072), SYNERGY_VM_DISK (4G).
set -euo pipefail

self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${SYNERGY_VM_CACHE:-/var/cache/synergy/vm}
run=$cache/run
cpus=${SYNERGY_VM_CPUS:-2}
mem_mb=${SYNERGY_VM_MEM_MB:-3072}
disk=${SYNERGY_VM_DISK:-4G}
boot_timeout=${SYNERGY_VM_BOOT_TIMEOUT:-180}
accel=${SYNERGY_VM_ACCEL:-auto}

log() { echo "local-vm: $*" >&2; }
die() { echo "local-vm: $*" >&2; exit 1; }

# The recipe. Any change to it (or to customize_rootfs) gives a new hash and
# so a new image; recipe_version is for changes made elsewhere.
recipe_version=1
suite=bookworm
packages=(systemd systemd-sysv dbus libpam-systemd openssh-server linux-image-amd64 initramfs-tools
	udev procps util-linux kmod iproute2 e2fsprogs)
mirrors=(
	"deb http://deb.debian.org/debian $suite main"
	"deb http://deb.debian.org/debian $suite-updates main"
	"deb http://deb.debian.org/debian-security $suite-security main"
)
debstrap_opts=(
	--variant=minbase
	--aptopt='APT::Install-Recommends "false"'
	--dpkgopt='path-exclude=/usr/share/man/*'
	--dpkgopt='path-exclude=/usr/share/locale/*'
	--dpkgopt='path-exclude=/usr/share/doc/*'
	--dpkgopt='path-include=/usr/share/doc/*/copyright'
	# Hooks run with the rootfs as $1 and /proc, /sys, /dev mounted in it.
	--customize-hook='chroot "$1" systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service fstrim.timer'
	--customize-hook='chroot "$1" usermod -p "*" root' # no password: key login only
	--customize-hook='chroot "$1" ssh-keygen -A'
	# A small initrd (what finds /dev/vda and mounts it): under emulation
	# (TCG) the Debian default (MODULES=most, 36 MB) costs seconds of boot.
	--customize-hook='echo MODULES=list >"$1/etc/initramfs-tools/conf.d/synergy-vm"'
	--customize-hook='printf "%s\n" virtio_pci virtio_blk ext4 >>"$1/etc/initramfs-tools/modules"'
	--customize-hook='chroot "$1" update-initramfs -u -k all'
)
cmdline="root=/dev/vda rw console=ttyS0 systemd.unified_cgroup_hierarchy=1 net.ifnames=0 panic=1"

# customize_rootfs DIR PUBKEY: the files that make DIR a VM of ours.
customize_rootfs() {
	local dir=$1 pub=$2
	echo synergy-vm >"$dir/etc/hostname"
	printf '127.0.0.1\tlocalhost\n127.0.1.1\tsynergy-vm\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$dir/etc/hosts"
	# pass 0: the kernel mounts the root read-write (cmdline rw), no fsck.
	echo '/dev/vda / ext4 rw,relatime 0 0' >"$dir/etc/fstab"
	# One machine ID for every boot: no first-boot presets.
	tr -d - </proc/sys/kernel/random/uuid >"$dir/etc/machine-id"
	# slirp's guest address, set by ip(8): systemd-networkd and DHCP take
	# 10 s of an emulated boot. The guest reaches nothing (restrict=on): no
	# route, no DNS.
	printf '%s\n' '[Unit]' 'Description=The address slirp forwards ssh to' \
		'BindsTo=sys-subsystem-net-devices-eth0.device' 'After=sys-subsystem-net-devices-eth0.device' \
		'Wants=network.target' 'Before=network.target' \
		'[Service]' 'Type=oneshot' 'RemainAfterExit=yes' \
		'ExecStart=/sbin/ip link set eth0 up' 'ExecStart=/sbin/ip address add 10.0.2.15/24 dev eth0' \
		>"$dir/etc/systemd/system/synergy-net.service"
	mkdir -p "$dir/etc/systemd/system/multi-user.target.wants"
	ln -sf /etc/systemd/system/synergy-net.service "$dir/etc/systemd/system/multi-user.target.wants/"
	# MaxStartups: parallel tests log in at once, and an emulated guest
	# takes most of a second per login (the default drops some beyond 10);
	# MaxSessions: as many commands at once over the shared connection.
	printf 'PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUseDNS no\nMaxStartups 100\nMaxSessions 100\n' \
		>"$dir/etc/ssh/sshd_config.d/synergy.conf"
	# root's user manager (user@0.service) runs from boot, not started and
	# stopped again around each login.
	mkdir -p "$dir/var/lib/systemd/linger"
	touch "$dir/var/lib/systemd/linger/root"
	# Every controller in the root's subtree_control, as a host running
	# services with accounting would have them.
	mkdir -p "$dir/etc/systemd/system.conf.d"
	printf '[Manager]\nDefaultCPUAccounting=yes\nDefaultIOAccounting=yes\nDefaultMemoryAccounting=yes\nDefaultTasksAccounting=yes\n' \
		>"$dir/etc/systemd/system.conf.d/synergy.conf"
	install -d -m 700 "$dir/root/.ssh"
	install -m 600 "$pub" "$dir/root/.ssh/authorized_keys"
}

recipe_hash() {
	{
		printf '%s\n' "$recipe_version" "$suite" "${packages[@]}" "${mirrors[@]}" "${debstrap_opts[@]}" "$disk"
		declare -f customize_rootfs
	} | sha256sum | cut -c1-12
}

ssh_opts=(-F /dev/null -T -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null
	-o LogLevel=ERROR -o IdentitiesOnly=yes -o ConnectTimeout=10 -o ServerAliveInterval=15)

# load_state: port, pid, key, repo, overlay, serial of the started VM, or
# return 1 when none was started.
load_state() {
	[[ -f $run/state ]] || return 1
	# shellcheck source=/dev/null
	. "$run/state"
}

# alive: the state's qemu still runs (and is ours: its command line names our overlay).
alive() {
	[[ -n ${pid:-} && -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$overlay"
}

# Commands go over one shared connection (ssh's ControlMaster, started by
# start), about 0.2 s each against 1.5 to 2.5 s for a fresh login to an
# emulated guest; they all run in that connection's session scope. Without a
# live master, ssh makes a connection of its own.
vm_ssh() { ssh "${ssh_opts[@]}" -S "$run/ssh.sock" -o ControlMaster=no -i "$key" -p "$port" root@127.0.0.1 "$@"; }
answers() { vm_ssh true </dev/null >/dev/null 2>&1; }

# start_master: the shared connection, in the background for the VM's life.
start_master() {
	ssh -S "$run/ssh.sock" -O check x >/dev/null 2>&1 && return 0
	rm -f "$run/ssh.sock"
	(detached ssh "${ssh_opts[@]}" -M -N -S "$run/ssh.sock" -i "$key" -p "$port" root@127.0.0.1 \
		</dev/null >>"$run/ssh-master.log" 2>&1) &
	for _ in $(seq 100); do
		ssh -S "$run/ssh.sock" -O check x >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	log "the shared ssh connection did not come up (see $run/ssh-master.log); commands log in one by one"
}

need_packages() {
	local need=()
	command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
	command -v qemu-img >/dev/null || need+=(qemu-utils)
	command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
	command -v ssh >/dev/null || need+=(openssh-client)
	command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
	((${#need[@]})) || return 0
	[[ $(id -u) -eq 0 ]] || die "missing ${need[*]}: apt-get install ${need[*]}"
	log "installing ${need[*]}"
	apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need[@]}" >&2
}

# build IMAGEDIR: the rootfs, kernel, initrd and key of the recipe, made in a
# scratch directory beside IMAGEDIR and renamed into place when complete.
# mmdebstrap mounts /proc, /sys and /dev inside the rootfs while it works:
# removals stay on one file system, so a mount left behind by a killed build
# is never descended into.
build() {
	local dest=$1 start
	start=$(date +%s)
	find "$cache" -mindepth 1 -maxdepth 1 -name 'build.*' -exec rm -rf --one-file-system {} + 2>/dev/null || true
	tmp=$cache/build.$$
	mkdir -p "$tmp"
	trap 'rm -rf --one-file-system "$tmp"' EXIT
	ssh-keygen -q -t ed25519 -N '' -C synergy-vm -f "$tmp/id_ed25519"
	log "mmdebstrap $suite with ${packages[*]} (a few minutes, once per recipe)"
	include=$(IFS=,; echo "${packages[*]}")
	mmdebstrap "${debstrap_opts[@]}" --include="$include" --format=directory "$suite" "$tmp/rootfs" "${mirrors[@]}" >&2
	customize_rootfs "$tmp/rootfs" "$tmp/id_ed25519.pub"
	local kernel initrd
	kernel=$(find "$tmp/rootfs/boot" -name 'vmlinuz-*' | sort -V | tail -1)
	initrd=$(find "$tmp/rootfs/boot" -name 'initrd.img-*' | sort -V | tail -1)
	[[ -n $kernel && -n $initrd ]] || die "no kernel or initrd in the rootfs's /boot"
	cp "$kernel" "$tmp/vmlinuz"
	cp "$initrd" "$tmp/initrd.img"
	truncate -s "$disk" "$tmp/root.img"
	mkfs.ext4 -q -F -L synergy-vm -d "$tmp/rootfs" "$tmp/root.img"
	rm -rf --one-file-system "$tmp/rootfs"
	# Images of older recipes go (nothing runs on them: start holds the lock
	# and found no VM).
	find "$cache" -mindepth 1 -maxdepth 1 -name 'image-*' -exec rm -rf {} +
	mv "$tmp" "$dest"
	trap - EXIT
	log "built $dest in $(($(date +%s) - start)) s ($(du -sm "$dest" | cut -f1) MiB on disk)"
}

free_port() {
	local p
	for _ in $(seq 50); do
		p=$(shuf -i 20000-60999 -n 1)
		[[ -z $(ss -Hltn "sport = :$p" 2>/dev/null) ]] && { echo "$p"; return; }
	done
	die "no free local port found"
}

# detached CMD...: CMD in its own session, holding none of our file
# descriptors but stdin/out/err (not the lock, nor a caller's pipe).
detached() {
	local fd
	for fd in /proc/$BASHPID/fd/*; do
		fd=${fd##*/}
		if [[ $fd -gt 2 ]] 2>/dev/null; then eval "exec $fd>&-" 2>/dev/null || true; fi
	done
	exec setsid "$@"
}

mount_repo() {
	local q
	q=$(printf %q "$repo")
	vm_ssh "mkdir -p $q && { mountpoint -q $q || mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 synergy $q; }" </dev/null >&2 ||
		die "mounting the repository at $repo in the VM failed"
}

# set_accel: accel_opts, how qemu runs the guest's CPUs. KVM when /dev/kvm can run a
# stock kernel; else TCG, qemu's emulator (a CPU-bound loop runs about 13x
# slower than on the host; boot about 30 s). /dev/kvm of a PVM host
# (kvm_pvm: nested virtualization without VMX/SVM, as in Firecracker
# sandboxes) runs only kernels built as PVM guests, and Debian's is not one:
# its boot stops before the kernel's first line.
set_accel() {
	local a=$accel
	if [[ $a == auto ]]; then
		a=tcg
		[[ -w /dev/kvm && ! -d /sys/module/kvm_pvm ]] && a=kvm
	fi
	case $a in
	kvm) accel_opts=(-enable-kvm -cpu host) ;;
	tcg) accel_opts=(-accel tcg,thread=multi -cpu max) ;;
	*) die "SYNERGY_VM_ACCEL=$accel: want auto, kvm or tcg" ;;
	esac
}

cmd_start() {
	[[ $(id -u) -eq 0 ]] || die "start needs root"
	mkdir -p "$cache"
	exec 9>"$cache/lock"
	flock -w 1800 9 || die "another local-vm.sh holds $cache/lock"
	local image
	image=$cache/image-$(recipe_hash)
	if load_state && alive; then
		[[ $repo == "$root" ]] || die "the VM runs with the repository $repo, not $root: stop it first"
		if [[ $key != "$image/id_ed25519" ]]; then
			log "the VM runs an image of an older recipe: restarting it"
		elif answers; then
			start_master
			mount_repo
			log "already running (pid $pid, ssh port $port)"
			return 0
		else
			log "qemu (pid $pid) runs but ssh on port $port does not answer: restarting it"
		fi
	fi
	stop_locked
	need_packages
	[[ -s $image/root.img ]] || build "$image"

	local t0 ok=0 accel_opts
	set_accel
	t0=$(date +%s)
	mkdir -p "$run"
	key=$image/id_ed25519 repo=$root overlay=$run/overlay.qcow2 serial=$run/serial.log pid=
	qemu-img create -q -f qcow2 -F raw -b "$image/root.img" "$overlay"
	for _ in 1 2 3; do
		port=$(free_port)
		rm -f "$run/qemu.pid" "$serial"
		(detached qemu-system-x86_64 -name synergy-vm -nodefaults -no-user-config \
			-machine q35 "${accel_opts[@]}" -smp "$cpus" -m "$mem_mb" -nographic -no-reboot \
			-kernel "$image/vmlinuz" -initrd "$image/initrd.img" -append "$cmdline" \
			-drive "file=$overlay,format=qcow2,if=virtio,discard=unmap" \
			-netdev "user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:$port-:22" -device virtio-net-pci,netdev=net0 \
			-device virtio-rng-pci \
			-virtfs "local,path=$root,mount_tag=synergy,security_model=none,multidevs=remap" \
			-serial "file:$serial" -monitor none -pidfile "$run/qemu.pid" \
			</dev/null >"$run/qemu.log" 2>&1) &
		local launcher=$!
		# qemu writes its pidfile, then sets up its devices: one that
		# cannot be (a port taken since free_port) ends it within a second.
		while kill -0 "$launcher" 2>/dev/null && [[ ! -s $run/qemu.pid ]]; do sleep 0.1; done
		sleep 1
		pid=$(cat "$run/qemu.pid" 2>/dev/null || true)
		if alive; then ok=1; break; fi
		wait "$launcher" 2>/dev/null || true
		if ! grep -q 'host forwarding' "$run/qemu.log"; then break; fi
		log "port $port was taken; another"
	done
	if ((!ok)); then
		cat "$run/qemu.log" >&2
		rm -rf "$run"
		die "qemu did not start"
	fi
	printf 'pid=%q\nport=%q\nkey=%q\nrepo=%q\noverlay=%q\nserial=%q\n' "$pid" "$port" "$key" "$repo" "$overlay" "$serial" >"$run/state"
	log "qemu pid $pid (${accel_opts[*]}), ssh on 127.0.0.1:$port; waiting for ssh (up to $boot_timeout s)"

	local deadline=$((t0 + boot_timeout)) next=$((t0 + 15))
	until answers; do
		if ! alive; then
			tail -n 60 "$serial" >&2 || true
			cat "$run/qemu.log" >&2
			stop_locked
			die "qemu exited while booting (serial log above)"
		fi
		if (($(date +%s) >= deadline)); then
			tail -n 60 "$serial" >&2 || true
			stop_locked
			die "no ssh after $boot_timeout s (serial log above)"
		fi
		if (($(date +%s) >= next)); then
			log "still booting ($(($(date +%s) - t0)) s)"
			next=$((next + 15))
		fi
		sleep 1
	done
	start_master
	mount_repo
	log "up in $(($(date +%s) - t0)) s; $repo mounted (9p); scripts/local-vm.sh exec CMD runs CMD in it"
}

# stop_locked: stop the VM of the state, if any, and drop the state (the
# caller holds the lock). The serial log is kept as $cache/last-serial.log.
stop_locked() {
	if load_state; then
		if alive; then
			ssh -S "$run/ssh.sock" -O exit x >/dev/null 2>&1 || true
			timeout 15 ssh "${ssh_opts[@]}" -o ConnectTimeout=5 -i "$key" -p "$port" root@127.0.0.1 systemctl poweroff \
				</dev/null >/dev/null 2>&1 || true
			for _ in $(seq 300); do alive || break; sleep 0.1; done
			if alive; then
				log "qemu (pid $pid) did not power off in 30 s; killing it"
				kill -TERM "$pid" 2>/dev/null || true
				for _ in $(seq 50); do alive || break; sleep 0.1; done
				alive && kill -KILL "$pid" 2>/dev/null || true
			fi
			log "stopped (pid $pid)"
		fi
		[[ -f ${serial:-} ]] && cp "$serial" "$cache/last-serial.log"
	fi
	rm -rf "$run"
}

cmd_stop() {
	[[ -d $run ]] || return 0
	exec 9>"$cache/lock"
	flock -w 600 9 || die "another local-vm.sh holds $cache/lock"
	stop_locked
}

cmd_status() {
	if ! load_state; then
		echo "local-vm: not started (no $run/state)"
		exit 3
	fi
	if ! alive; then
		echo "local-vm: stopped: qemu (pid $pid) is gone; see $serial"
		exit 1
	fi
	if ! answers; then
		echo "local-vm: qemu (pid $pid) runs but ssh on 127.0.0.1:$port does not answer"
		exit 1
	fi
	echo "local-vm: running (pid $pid, ssh 127.0.0.1:$port, $repo mounted)"
}

cmd_exec() {
	(($#)) || die "exec: no command"
	load_state || die "exec: the VM is not started (scripts/local-vm.sh start)"
	# The remote side runs the string through root's shell (bash): %q
	# quoting makes each argument arrive as it is here.
	exec ssh "${ssh_opts[@]}" -S "$run/ssh.sock" -o ControlMaster=no -i "$key" -p "$port" root@127.0.0.1 -- "$(printf '%q ' "$@")"
}

case ${1:-} in
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
exec) shift; cmd_exec "$@" ;;
*) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$self" >&2; exit 2 ;;
esac
