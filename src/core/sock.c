/*
 * TCP socket helpers shared by client and server.  Every socket is
 * non-blocking and close-on-exec from birth.
 */
#include "config.h"

#include "core/sock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "core/addr.h"
#include "core/log.h"

/* Close fd without disturbing the errno the caller is about to report. */
static void
sock_close_keep_errno(int fd)
{
	int	saved = errno;

	close(fd);
	errno = saved;
}

int
sock_set_nonblock(int fd)
{
	int	flags;

	if ((flags = fcntl(fd, F_GETFL)) == -1)
		return -1;
	if ((flags & O_NONBLOCK) == 0 &&
	    fcntl(fd, F_SETFL, flags | O_NONBLOCK) == -1)
		return -1;
	return 0;
}

/*
 * A missing congestion control module (ENOENT) or one not in
 * net.ipv4.tcp_allowed_congestion_control (EPERM) is the same on every
 * socket: say so once per process, not once per flow.
 */
int
sock_set_cc(int fd, const char *cc)
{
	static atomic_flag	warned = ATOMIC_FLAG_INIT;

	if (cc == NULL || *cc == '\0')
		return 0;
	if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc,
	    (socklen_t)strlen(cc)) == 0)
		return 0;
	if (!atomic_flag_test_and_set(&warned))
		log_warnx("congestion control '%s' unavailable (%s); "
		    "using the system default", cc, strerror(errno));
	return -1;
}

void
sock_set_nodelay(int fd)
{
	int	on = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)) == -1)
		log_warn("setsockopt TCP_NODELAY fd %d", fd);
}

/*
 * A mark that cannot be set is an error, not a warning: the outer socket
 * would otherwise be routed into our own TUN.
 */
int
sock_connect(const struct addr *a, const char *cc, uint32_t mark)
{
	int	fd;

	fd = socket(addr_family(a), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return -1;
	sock_set_nodelay(fd);
	(void)sock_set_cc(fd, cc);
	if (mark != 0 &&
	    setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark)) == -1) {
		log_warn("setsockopt SO_MARK %u", mark);
		goto fail;
	}
	if (connect(fd, &a->u.sa, a->len) == -1 && errno != EINPROGRESS)
		goto fail;
	return fd;
fail:
	sock_close_keep_errno(fd);
	return -1;
}

int
sock_connect_error(int fd)
{
	int		err = 0;
	socklen_t	len = sizeof(err);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
		return errno;
	return err;
}

static int
sock_setopt_int(int fd, int level, int name, int val)
{
	return setsockopt(fd, level, name, &val, sizeof(val));
}

int
sock_listen(const struct addr *a, bool reuseport, int backlog)
{
	int	fd, family = addr_family(a);

	fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return -1;
	if (sock_setopt_int(fd, SOL_SOCKET, SO_REUSEADDR, 1) == -1)
		goto fail;
	/* "[::]:443" should not also claim the IPv4 port. */
	if (family == AF_INET6 &&
	    sock_setopt_int(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1) == -1)
		goto fail;
	if (reuseport && sock_setopt_int(fd, SOL_SOCKET, SO_REUSEPORT, 1) == -1)
		goto fail;
	if (bind(fd, &a->u.sa, a->len) == -1 || listen(fd, backlog) == -1)
		goto fail;
	return fd;
fail:
	sock_close_keep_errno(fd);
	return -1;
}

/* The peer sees an RST instead of a FIN: an abortive close. */
void
sock_close_rst(int fd)
{
	struct linger	lg = { .l_onoff = 1, .l_linger = 0 };

	if (fd < 0)
		return;
	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}
