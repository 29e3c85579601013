/*
 * Process lifecycle around a role.  See daemon.h.
 *
 * Privileges: after the TUN is open and every socket is bound, the daemon
 * becomes user:/group: and keeps exactly one capability, CAP_NET_ADMIN,
 * which SO_MARK on the outer sockets and a congestion control outside
 * net.ipv4.tcp_allowed_congestion_control still need.  The capability calls
 * are two raw syscalls (capget/capset) rather than libcap: it is all we
 * need, and OpenWrt then needs no extra library.
 *
 * Routes: with route: auto a small helper process is forked (as root, before
 * the drop) that waits on a pipe and runs `tunsplit-route down` when the
 * daemon asks for it at a clean exit.  If the daemon dies instead, the pipe
 * just closes and the helper leaves the routes in place: tunsplit-route is
 * fail-closed, and traffic must not leak around a dead tunnel.
 */
#include "config.h"

#include "daemon/daemon.h"

#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <arpa/inet.h>

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/addr.h"
#include "conf/conf.h"
#include "core/log.h"
#include "core/stats.h"
#include "daemon/notify.h"

#ifndef SBINDIR
#define SBINDIR	"/usr/sbin"
#endif
#define DAEMON_ROUTE	"tunsplit-route"

static struct {
	struct conf	*live;
	bool		 debug;
	uint64_t	 start_us;
	bool		 draining;
	int		 ready_fd;	/* to the waiting `run -d` parent */
	int		 pid_fd;
	char		*pid_path;
	pid_t		 route_pid;	/* the helper, 0 if none */
	int		 route_fd;	/* its pipe */
	bool		 worker;	/* a client worker process */
} d = { .ready_fd = -1, .pid_fd = -1, .route_fd = -1 };

void
daemon_init(struct conf *live, bool debug)
{
	d.live = conf_ref(live);
	d.debug = debug;
	d.start_us = stats_now_us();
}

uint64_t
daemon_uptime_ms(void)
{
	return (stats_now_us() - d.start_us) / 1000;
}

bool
daemon_draining(void)
{
	return d.draining;
}

/* ---- background, pid file ------------------------------------------- */

static void
daemon_null_stdio(void)
{
	int	fd;

	if ((fd = open("/dev/null", O_RDWR)) == -1)
		return;
	(void)dup2(fd, STDIN_FILENO);
	(void)dup2(fd, STDOUT_FILENO);
	(void)dup2(fd, STDERR_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
}

int
daemon_background(void)
{
	int	p[2], status, fd;
	char	c;
	pid_t	pid;
	ssize_t	r;

	if (pipe2(p, O_CLOEXEC) == -1) {
		log_warn("pipe");
		return -1;
	}
	fflush(NULL);
	if ((pid = fork()) == -1) {
		log_warn("fork");
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid > 0) {
		/* The foreground process: its exit status is the daemon's
		 * (daemon_report), so scripts can trust `run -d`; 1 if it
		 * died without a word. */
		close(p[1]);
		(void)waitpid(pid, &status, 0);
		do
			r = read(p[0], &c, 1);
		while (r == -1 && errno == EINTR);
		_exit(r == 1 ? (unsigned char)c : 1);
	}
	close(p[0]);
	if (setsid() == -1)
		_exit(1);
	/* Not a session leader: it can never acquire a terminal. */
	if ((pid = fork()) == -1)
		_exit(1);
	if (pid > 0)
		_exit(0);
	d.ready_fd = p[1];
	if (chdir("/") == -1)
		log_warn("chdir /");
	/* stdio stays until daemon_report: what goes wrong until then is
	 * said on the terminal (the parent is still there, waiting). */
	if ((fd = open("/dev/null", O_RDONLY)) != -1) {
		(void)dup2(fd, STDIN_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
	log_stderr_copy(true);
	return 0;
}

void
daemon_report(int status)
{
	char	c = (char)status;

	if (d.ready_fd == -1)
		return;
	/* Let go of the caller's terminal (or pipe) before it returns. */
	if (status == 0) {
		log_stderr_copy(false);
		daemon_null_stdio();
	}
	if (write(d.ready_fd, &c, 1) != 1)
		log_warn("telling the parent");
	close(d.ready_fd);
	d.ready_fd = -1;
}

int
daemon_pidfile(const char *path)
{
	char	buf[32];
	int	fd, n;

	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
	    0644)) == -1) {
		log_warn("pid file %s", path);
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		n = (int)read(fd, buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		log_warnx("pid file %s is locked: tunsplit is already running "
		    "(pid %s)", path, buf);
		close(fd);
		return -1;
	}
	n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) == -1 || write(fd, buf, (size_t)n) != n) {
		log_warn("pid file %s", path);
		close(fd);
		return -1;
	}
	d.pid_fd = fd;
	if ((d.pid_path = strdup(path)) == NULL)
		log_warn("pid file");
	return 0;
}

/* ---- routes ----------------------------------------------------------- */

static const char *
daemon_route_path(void)
{
	static const char	installed[] = SBINDIR "/" DAEMON_ROUTE;

	/* Installed next to us; else whatever PATH finds (build trees). */
	return access(installed, X_OK) == 0 ? installed : DAEMON_ROUTE;
}

/* Runs tunsplit-route with argv (argv[0] filled in); its exit status. */
static int
daemon_route_run(char **argv)
{
	int	status;
	pid_t	pid;

	argv[0] = (char *)(uintptr_t)daemon_route_path();
	fflush(NULL);
	if ((pid = fork()) == -1) {
		log_warn("fork");
		return -1;
	}
	if (pid == 0) {
		/* The signals the role blocked for its signalfd. */
		sigset_t	all;

		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		execvp(argv[0], argv);
		log_warn("exec %s", argv[0]);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) == -1)
		if (errno != EINTR) {
			log_warn("waitpid");
			return -1;
		}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static void
daemon_route_down_now(const char *dev)
{
	char	*argv[] = { NULL, (char *)(uintptr_t)"down", (char *)(uintptr_t)
	    "--dev", (char *)(uintptr_t)dev, NULL };
	int	 rc;

	if ((rc = daemon_route_run(argv)) != 0)
		log_warnx("%s down --dev %s: exit status %d", DAEMON_ROUTE,
		    dev, rc);
	else
		log_info("routes through %s removed", dev);
}

/*
 * The helper: root, no fds but its pipe and stdio, deaf to the signals a
 * service manager sends the whole group, so that it outlives the daemon
 * long enough to clean up after it.
 */
static void
daemon_route_helper(int fd, const char *dev)
{
	char	c;
	ssize_t	r;
	int	i, max = (int)sysconf(_SC_OPEN_MAX);

	for (i = STDERR_FILENO + 1; i < (max > 0 ? max : 1024); i++)
		if (i != fd)
			(void)close(i);
	/* It outlives `run -d`'s parent, which must not wait for it. */
	if (d.ready_fd != -1) {
		log_stderr_copy(false);
		daemon_null_stdio();
	}
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	(void)prctl(PR_SET_NAME, "tunsplit-route");
	do
		r = read(fd, &c, 1);
	while (r == -1 && errno == EINTR);
	if (r == 1 && c == 'd')
		daemon_route_down_now(dev);
	else
		log_warnx("daemon gone without a clean exit: routes through "
		    "%s left in place (fail-closed); `%s down --dev %s` "
		    "removes them", dev, DAEMON_ROUTE, dev);
	_exit(0);
}

static int
daemon_route_up(const char *dev, const struct addr *server)
{
	const struct conf	*c = d.live;
	char			 mark[16], ip[INET6_ADDRSTRLEN];
	char			 (*ex)[INET6_ADDRSTRLEN + 8] = NULL;
	char			 uids[CONF_MAX_UIDS][24];
	char			**argv = NULL;
	size_t			 n = 0, i;
	int			 p[2], rc = -1;
	pid_t			 pid;

	/* The server is reached by the marked sockets alone: no --server,
	 * whose rule would let every app's packet to that address bypass
	 * the TUN.  The address is only logged ("none": direct, block). */
	if (server == NULL)
		snprintf(ip, sizeof(ip), "none");
	else if (inet_ntop(addr_family(server), addr_ip(server, &i), ip,
	    sizeof(ip)) == NULL)
		return -1;
	snprintf(mark, sizeof(mark), "0x%x", c->client.mark);
	if ((argv = calloc(12 + 2 * c->client.nroute_exclude +
	    2 * c->client.nroute_uids,
	    sizeof(*argv))) == NULL ||
	    (ex = calloc(c->client.nroute_exclude + 1, sizeof(*ex))) == NULL) {
		log_warn("route");
		goto out;
	}
#define ARG(s)	(argv[n++] = (char *)(uintptr_t)(s))
	ARG(NULL);
	ARG("up");
	ARG("--dev");
	ARG(dev);
	ARG("--mark");
	ARG(mark);
	/* A TUN without IPv6 cannot carry it: IPv6 is refused unless the
	 * configuration lets it go around the tunnel. */
	if (!c->tun.has_addr6)
		ARG(c->client.ipv6_bypass ? "--ipv6=bypass" : "--ipv6=block");
	/* A pinned resolver, or fake-IP answers: port 53 to a local
	 * network's address would otherwise take the connected route,
	 * around the TUN (and get real answers). */
	if (c->client.has_dns || c->client.dns_fakeip)
		ARG("--dns");
	for (i = 0; i < c->client.nroute_exclude; i++) {
		cidr_fmt(&c->client.route_exclude[i], ex[i], sizeof(ex[i]));
		ARG("--exclude");
		ARG(ex[i]);
	}
	for (i = 0; i < c->client.nroute_uids; i++) {
		snprintf(uids[i], sizeof(uids[i]), "%" PRIu32 "-%" PRIu32,
		    c->client.route_uids[i].lo, c->client.route_uids[i].hi);
		ARG(c->client.route_uids_include ? "--uid-include" :
		    "--uid-exclude");
		ARG(uids[i]);
	}
#undef ARG
	if ((rc = daemon_route_run(argv)) != 0) {
		if (rc == 127)
			log_warnx("route: auto needs %s, found neither in "
			    SBINDIR " nor in PATH", DAEMON_ROUTE);
		else
			log_warnx("%s up --dev %s: exit status %d",
			    DAEMON_ROUTE, dev, rc);
		/* Whatever it managed to add before failing. */
		daemon_route_down_now(dev);
		rc = -1;
		goto out;
	}
	log_info("default routes through %s (mark %s, server %s%s)", dev, mark,
	    ip, c->client.has_dns || c->client.dns_fakeip ?
	    ", port 53 to any address" : "");
	if (c->tun.has_addr6)
		log_info("IPv6 goes through the tunnel");
	else if (c->client.ipv6_bypass)
		log_warnx("IPv6 bypasses the tunnel (the TUN has no IPv6 "
		    "address; client.ipv6: bypass)");
	else
		log_info("IPv6 is blocked: the TUN has no IPv6 address "
		    "(client.ipv6: bypass would let it around the tunnel)");
	if (pipe2(p, O_CLOEXEC) == -1 || (pid = fork()) == -1) {
		log_warn("route helper");
		daemon_route_down_now(dev);
		rc = -1;
		goto out;
	}
	if (pid == 0) {
		close(p[1]);
		daemon_route_helper(p[0], dev);
	}
	close(p[0]);
	d.route_pid = pid;
	d.route_fd = p[1];
	rc = 0;
out:
	free(argv);
	free(ex);
	return rc;
}

/* ---- privileges --------------------------------------------------------- */

static int
daemon_caps(uint64_t keep)
{
	struct __user_cap_header_struct	hdr;
	struct __user_cap_data_struct	data[2];

	memset(&hdr, 0, sizeof(hdr));
	memset(data, 0, sizeof(data));
	hdr.version = _LINUX_CAPABILITY_VERSION_3;
	data[0].effective = data[0].permitted = (uint32_t)keep;
	data[1].effective = data[1].permitted = (uint32_t)(keep >> 32);
	return (int)syscall(SYS_capset, &hdr, data);
}

static int
daemon_drop_privileges(void)
{
	const struct conf	*c = d.live;
	const uint64_t		 keep = 1ULL << CAP_NET_ADMIN;
	struct passwd		*pw;
	struct group		*gr;
	uid_t			 uid;
	gid_t			 gid;
	int			 cap;

	if ((pw = getpwnam(c->user)) == NULL) {
		log_warnx("user %s: no such user", c->user);
		return -1;
	}
	uid = pw->pw_uid;
	gid = pw->pw_gid;
	if (c->group[0] != '\0') {
		if ((gr = getgrnam(c->group)) == NULL) {
			log_warnx("group %s: no such group", c->group);
			return -1;
		}
		gid = gr->gr_gid;
	}
	/* Let the new user reach the control socket and the pid file. */
	if (c->control[0] != '\0' && chown(c->control, uid, gid) == -1)
		log_warn("chown %s", c->control);
	if (d.pid_fd != -1 && fchown(d.pid_fd, uid, gid) == -1)
		log_warn("chown %s", d.pid_path);
	/* Nothing this process starts later may gain more than it has. */
	for (cap = 0; cap <= 63; cap++)
		if (cap != CAP_NET_ADMIN &&
		    prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == -1 &&
		    errno != EINVAL)
			log_debug("capability bounding set: %d: %s", cap,
			    strerror(errno));
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) == -1 ||
	    setgroups(1, &gid) == -1 || setresgid(gid, gid, gid) == -1 ||
	    setresuid(uid, uid, uid) == -1) {
		log_warn("dropping privileges to %s", c->user);
		return -1;
	}
	if (daemon_caps(keep) == -1) {
		log_warn("capset");
		return -1;
	}
	(void)prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
	(void)prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	/* Paranoia: a drop that can be undone is no drop at all. */
	if (uid != 0 && (setuid(0) == 0 || seteuid(0) == 0))
		fatalx("could regain root after dropping privileges");
	log_info("running as %s (uid %ld, gid %ld), keeping CAP_NET_ADMIN",
	    c->user, (long)uid, (long)gid);
	return 0;
}

/* ---- up, down ----------------------------------------------------------- */

void
daemon_worker(void)
{
	d.worker = true;
	if (d.ready_fd != -1)
		close(d.ready_fd);
	if (d.pid_fd != -1)
		close(d.pid_fd);	/* the main process holds the lock */
	if (d.route_fd != -1)
		close(d.route_fd);
	d.ready_fd = d.pid_fd = d.route_fd = -1;
	d.route_pid = 0;
	free(d.pid_path);
	d.pid_path = NULL;
	/* systemd hears from the main process only. */
	(void)unsetenv("NOTIFY_SOCKET");
}

int
daemon_up(const char *tun_dev, const struct addr *server)
{
	const struct conf	*c = d.live;

	if (d.worker)
		return c->user[0] != '\0' ? daemon_drop_privileges() : 0;
	if (c->role == CONF_ROLE_CLIENT && c->client.route_auto &&
	    tun_dev != NULL && daemon_route_up(tun_dev, server) == -1)
		return -1;
	if (c->user[0] != '\0' && daemon_drop_privileges() == -1)
		return -1;
	daemon_report(0);
	notify_ready();		/* systemctl start returns now */
	return 0;
}

void
daemon_down(void)
{
	int	status;
	char	c = 'd';

	notify_stopping();	/* once: SIGTERM may have said so already */
	if (d.route_fd != -1) {
		if (write(d.route_fd, &c, 1) != 1)
			log_warn("route helper");
		close(d.route_fd);
		d.route_fd = -1;
		while (waitpid(d.route_pid, &status, 0) == -1 && errno == EINTR)
			;
		d.route_pid = 0;
	}
	if (d.pid_fd != -1) {
		/* May fail after a privilege drop; the lock, not the file,
		 * tells whether a daemon runs. */
		if (d.pid_path != NULL)
			(void)unlink(d.pid_path);
		close(d.pid_fd);
		d.pid_fd = -1;
	}
	free(d.pid_path);
	d.pid_path = NULL;
	conf_unref(d.live);
	d.live = NULL;
}

/* ---- reload ------------------------------------------------------------- */

/*
 * A reload loads the file as a new generation of the configuration and
 * validates it whole.  Settings that only a restart can apply (they were
 * used to open something: the TUN, listeners, sockets' marks, the TLS
 * contexts, routes, the pool) are compared with the running generation;
 * where they changed, that is logged and the running value carried into
 * the new generation, so that the live generation always says what runs.
 * Nothing in the running generation is ever written.
 */

static bool
daemon_keeps(const char *what, bool changed)
{
	if (changed)
		log_warnx("reload: %s changed: restart to apply it", what);
	return changed;
}

static bool
str_differ(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a != b;
	return strcmp(a, b) != 0;
}

/* *dst becomes a copy of src.  0, or -1: out of memory. */
static int
carry_str(char **dst, const char *src)
{
	char *p = NULL;

	if (src != NULL && (p = strdup(src)) == NULL)
		return -1;
	free(*dst);
	*dst = p;
	return 0;
}

static int
carry_cidrs(struct cidr **dst, size_t *ndst, const struct cidr *src,
    size_t n)
{
	struct cidr *p = NULL;

	if (n > 0 && (p = calloc(n, sizeof(*p))) == NULL)
		return -1;
	if (n > 0)
		memcpy(p, src, n * sizeof(*p));
	free(*dst);
	*dst = p;
	*ndst = n;
	return 0;
}

static bool
cidrs_differ(const struct cidr *a, size_t na, const struct cidr *b, size_t nb)
{
	return na != nb || (na > 0 && memcmp(a, b, na * sizeof(*a)) != 0);
}

static int
daemon_carry_client(const struct conf *live, struct conf *n)
{
	int rc = 0;

	if (daemon_keeps("tun", strcmp(live->tun.name, n->tun.name) != 0 ||
	    live->tun.mtu != n->tun.mtu ||
	    live->tun.offload != n->tun.offload ||
	    live->tun.has_addr4 != n->tun.has_addr4 ||
	    live->tun.has_addr6 != n->tun.has_addr6 ||
	    memcmp(&live->tun.addr4, &n->tun.addr4, sizeof(n->tun.addr4)) ||
	    memcmp(&live->tun.addr6, &n->tun.addr6, sizeof(n->tun.addr6))))
		n->tun = live->tun;
	if (daemon_keeps("client.mark, congestion, route, route_exclude, "
	    "route_uid_* or ipv6",
	    live->client.mark != n->client.mark ||
	    strcmp(live->client.congestion, n->client.congestion) != 0 ||
	    live->client.route_auto != n->client.route_auto ||
	    live->client.ipv6_bypass != n->client.ipv6_bypass ||
	    cidrs_differ(live->client.route_exclude,
	    live->client.nroute_exclude, n->client.route_exclude,
	    n->client.nroute_exclude) ||
	    live->client.nroute_uids != n->client.nroute_uids ||
	    live->client.route_uids_include != n->client.route_uids_include ||
	    memcmp(live->client.route_uids, n->client.route_uids,
	    sizeof(n->client.route_uids)) != 0)) {
		n->client.mark = live->client.mark;
		memcpy(n->client.congestion, live->client.congestion,
		    sizeof(n->client.congestion));
		n->client.route_auto = live->client.route_auto;
		n->client.ipv6_bypass = live->client.ipv6_bypass;
		rc |= carry_cidrs(&n->client.route_exclude,
		    &n->client.nroute_exclude, live->client.route_exclude,
		    live->client.nroute_exclude);
		memcpy(n->client.route_uids, live->client.route_uids,
		    sizeof(n->client.route_uids));
		n->client.nroute_uids = live->client.nroute_uids;
		n->client.route_uids_include = live->client.route_uids_include;
	}
	if (daemon_keeps("client.workers", live->client.workers !=
	    n->client.workers))
		n->client.workers = live->client.workers;
	/* The routes catch port 53 only with a pinned resolver: setting
	 * or removing it means new routes (a new address does not). */
	if (live->client.route_auto && daemon_keeps("client.dns set or "
	    "removed with route: auto", live->client.has_dns !=
	    n->client.has_dns)) {
		n->client.has_dns = live->client.has_dns;
		n->client.dns = live->client.dns;
	}
	/* The fake-IP table is made at start; fake_ip_exclude and the
	 * resolver apply at once. */
	if (daemon_keeps("client.dns mode, fake_ip_range, fake_ip_range6, "
	    "fake_ip_size or fake_ip_file",
	    live->client.dns_fakeip != n->client.dns_fakeip ||
	    cidrs_differ(&live->client.fake_ip_range4, 1,
	    &n->client.fake_ip_range4, 1) ||
	    live->client.has_fake_ip_range6 != n->client.has_fake_ip_range6 ||
	    cidrs_differ(&live->client.fake_ip_range6, 1,
	    &n->client.fake_ip_range6, 1) ||
	    live->client.fake_ip_size != n->client.fake_ip_size ||
	    str_differ(live->client.fake_ip_file, n->client.fake_ip_file))) {
		n->client.dns_fakeip = live->client.dns_fakeip;
		n->client.fake_ip_range4 = live->client.fake_ip_range4;
		n->client.has_fake_ip_range6 = live->client.has_fake_ip_range6;
		n->client.fake_ip_range6 = live->client.fake_ip_range6;
		n->client.fake_ip_size = live->client.fake_ip_size;
		rc |= carry_str(&n->client.fake_ip_file,
		    live->client.fake_ip_file);
	}
	return rc;
}

static int
daemon_carry_server(const struct conf *live, struct conf *n)
{
	bool	listen = live->server.nlisten != n->server.nlisten;
	size_t	i;

	for (i = 0; !listen && i < n->server.nlisten; i++)
		listen = !addr_eq(&live->server.listen[i], &n->server.listen[i]);
	if (daemon_keeps("server.listen", listen)) {
		memcpy(n->server.listen, live->server.listen,
		    sizeof(n->server.listen));
		n->server.nlisten = live->server.nlisten;
	}
	/* The resolver's threads and cache are sized at start. */
	if (daemon_keeps("server.resolver",
	    live->server.resolve_workers != n->server.resolve_workers ||
	    live->server.resolve_queue != n->server.resolve_queue ||
	    live->server.resolve_timeout_ms != n->server.resolve_timeout_ms ||
	    live->server.resolve_cache != n->server.resolve_cache ||
	    live->server.resolve_ttl_ms != n->server.resolve_ttl_ms ||
	    live->server.resolve_negative_ttl_ms !=
	    n->server.resolve_negative_ttl_ms)) {
		n->server.resolve_workers = live->server.resolve_workers;
		n->server.resolve_queue = live->server.resolve_queue;
		n->server.resolve_timeout_ms = live->server.resolve_timeout_ms;
		n->server.resolve_cache = live->server.resolve_cache;
		n->server.resolve_ttl_ms = live->server.resolve_ttl_ms;
		n->server.resolve_negative_ttl_ms =
		    live->server.resolve_negative_ttl_ms;
	}
	if (daemon_keeps("server.padding",
	    live->server.padding != n->server.padding))
		n->server.padding = live->server.padding;
	/* The workers' threads and listeners are made at start. */
	if (daemon_keeps("server.workers",
	    live->server.workers != n->server.workers))
		n->server.workers = live->server.workers;
	return 0;
}

static int
daemon_carry(const struct conf *live, struct conf *n)
{
	int rc = 0;

	if (daemon_keeps("log.syslog", live->log_syslog != n->log_syslog))
		n->log_syslog = live->log_syslog;
	if (daemon_keeps("control or metrics",
	    strcmp(live->control, n->control) != 0 ||
	    live->has_metrics != n->has_metrics ||
	    (n->has_metrics && !addr_eq(&live->metrics, &n->metrics)))) {
		memcpy(n->control, live->control, sizeof(n->control));
		n->has_metrics = live->has_metrics;
		n->metrics = live->metrics;
	}
	if (daemon_keeps("pidfile, user or group",
	    str_differ(live->pidfile, n->pidfile) ||
	    strcmp(live->user, n->user) != 0 ||
	    strcmp(live->group, n->group) != 0)) {
		rc |= carry_str(&n->pidfile, live->pidfile);
		memcpy(n->user, live->user, sizeof(n->user));
		memcpy(n->group, live->group, sizeof(n->group));
	}
	if (live->role == CONF_ROLE_CLIENT)
		rc |= daemon_carry_client(live, n);
	else
		rc |= daemon_carry_server(live, n);
	return rc;
}

int
daemon_reload(void (*adopt)(void *arg, const struct conf *n), void *arg)
{
	struct conf	*live = d.live, *n;
	char		 err[512];

	if (live == NULL || live->path == NULL) {
		log_warnx("reload: no configuration file to read");
		return -1;
	}
	if ((n = conf_load_file(live->path, err, sizeof(err))) == NULL) {
		log_warnx("reload: %s; keeping the running configuration", err);
		return -1;
	}
	if (n->role != live->role) {
		log_warnx("reload: %s: the role changed; restart to apply it",
		    live->path);
		conf_unref(n);
		return -1;
	}
	if (daemon_carry(live, n) != 0) {
		log_warnx("reload: out of memory; keeping the running "
		    "configuration");
		conf_unref(n);
		return -1;
	}
	n->generation = live->generation + 1;
	if (!d.debug)
		log_set_level((enum log_level)n->log_level);
	log_set_flows(n->log_flows);
	adopt(arg, n);
	d.live = n;		/* the loader's reference, now the daemon's */
	conf_unref(live);	/* lives on in flows that still hold it */
	log_info("reloaded %s (generation %llu)", n->path,
	    (unsigned long long)n->generation);
	return 0;
}

const struct conf *
daemon_conf(void)
{
	return d.live;
}

/* ---- drain -------------------------------------------------------------- */

static void
daemon_drain_check(void *arg)
{
	struct daemon_drain	*dr = arg;

	if (dr->active && dr->live(dr->arg) == 0) {
		log_info("drained: stopping");
		loop_stop(dr->loop);
	}
}

static void
daemon_on_drain_timer(struct loop_timer *t)
{
	struct daemon_drain	*dr = container_of(t, struct daemon_drain,
				    timer);

	log_info("drain_timeout: closing %zu still open", dr->live(dr->arg));
	loop_stop(dr->loop);
}

int
daemon_drain_init(struct daemon_drain *dr, struct loop *l,
    void (*stop)(void *), size_t (*live)(void *), void *arg)
{
	memset(dr, 0, sizeof(*dr));
	dr->loop = l;
	dr->stop = stop;
	dr->live = live;
	dr->arg = arg;
	loop_timer_init(&dr->timer, daemon_on_drain_timer);
	return loop_on_iteration(l, daemon_drain_check, dr);
}

void
daemon_drain_signal(struct daemon_drain *dr, int signo)
{
	unsigned	ms = d.live != NULL ? d.live->drain_timeout_ms :
			    CONF_DRAIN_DEFAULT_MS;

	if (dr->active || ms == 0) {
		log_info("%s: stopping now", strsignal(signo));
		loop_timer_cancel(dr->loop, &dr->timer);
		loop_stop(dr->loop);
		return;
	}
	dr->active = true;
	d.draining = true;
	dr->stop(dr->arg);
	log_info("%s: draining %zu for up to %u ms (again: stop now)",
	    strsignal(signo), dr->live(dr->arg), ms);
	loop_timer_set(dr->loop, &dr->timer, ms);
}
