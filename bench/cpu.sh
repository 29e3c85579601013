# shellcheck shell=bash
# bench/cpu.sh (sourced): the CPU time of a daemon and its descendants.
# A tunsplit client with `workers: N` is N processes (worker 0 the
# parent), so reading the parent's /proc/PID/stat alone misses the rest.

# cpu_tree_stat PID: PID and its descendants, one line each:
# "pid ticks user_ticks" (ticks: utime + stime + cutime + cstime; user:
# utime + cutime).  Fields after the ")" of the command name: the ppid
# is the 2nd, utime the 12th.  A child's CPU is in its own stat while it
# runs and in its parent's cutime and cstime once reaped, so summing over
# the tree loses nothing when a child ends between two samples and counts
# nothing twice.
cpu_tree_stat() {
	[ -n "$1" ] && [ "$1" != 0 ] && [ -r "/proc/$1/stat" ] || return 0
	cat /proc/[0-9]*/stat 2>/dev/null | awk -v root="$1" '
	{
		pid = $1
		sub(/.*\) /, "")
		ppid[pid] = $2
		t[pid] = $12 + $13 + $14 + $15
		u[pid] = $12 + $14
	}
	END {
		for (p in t) {
			q = p
			for (n = 0; q != root && q > 1 && n < 64; n++)
				q = ppid[q]
			if (q == root)
				print p, t[p], u[p]
		}
	}'
}

# cpu_ticks PID [user]: clock ticks so far of PID and its descendants
# (user + system, or with "user" the user time alone).
cpu_ticks() {
	local col=2
	[ "${2:-}" = user ] && col=3
	cpu_tree_stat "$1" | awk -v c="$col" '{ sum += $c } END { print sum + 0 }'
}
