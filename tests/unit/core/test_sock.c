/* sock: loopback-only checks of the socket helpers. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "core/addr.h"
#include "core/sock.h"

static int
intopt(int fd, int level, int name)
{
	int		v = -1;
	socklen_t	len = sizeof(v);

	assert_int_equal(getsockopt(fd, level, name, &v, &len), 0);
	return v;
}

/* A listener on an ephemeral loopback port; its address goes to *bound. */
static int
listen_any(const char *s, bool reuseport, struct addr *bound)
{
	struct addr	a;
	int		fd;

	assert_int_equal(addr_parse(&a, s), 0);
	fd = sock_listen(&a, reuseport, 16);
	assert_true(fd >= 0);
	*bound = a;
	bound->len = sizeof(bound->u.ss);
	assert_int_equal(getsockname(fd, &bound->u.sa, &bound->len), 0);
	return fd;
}

static void
wait_fd(int fd, short events)
{
	struct pollfd	pfd = { .fd = fd, .events = events };

	assert_int_equal(poll(&pfd, 1, 2000), 1);
}

static void
test_listen_connect_v4(void **state)
{
	struct addr	la;
	char		c;
	int		lfd, cfd, afd;

	(void)state;
	lfd = listen_any("127.0.0.1:0", false, &la);
	assert_true(fcntl(lfd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(lfd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(intopt(lfd, SOL_SOCKET, SO_REUSEADDR), 1);
	assert_int_equal(intopt(lfd, SOL_SOCKET, SO_REUSEPORT), 0);
	assert_true(addr_port(&la) != 0);

	cfd = sock_connect(&la, NULL, 0);
	assert_true(cfd >= 0);
	assert_true(fcntl(cfd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(cfd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(intopt(cfd, IPPROTO_TCP, TCP_NODELAY), 1);
	wait_fd(cfd, POLLOUT);
	assert_int_equal(sock_connect_error(cfd), 0);
	wait_fd(lfd, POLLIN);
	afd = accept(lfd, NULL, NULL);
	assert_true(afd >= 0);

	/* Abortive close: the peer reads ECONNRESET, not EOF. */
	sock_close_rst(cfd);
	wait_fd(afd, POLLIN);
	assert_int_equal(read(afd, &c, 1), -1);
	assert_int_equal(errno, ECONNRESET);
	sock_close_rst(-1);	/* no-op */
	close(afd);
	close(lfd);
}

static void
test_connect_refused(void **state)
{
	struct addr	la;
	int		lfd, cfd;

	(void)state;
	assert_int_equal(sock_connect_error(-1), EBADF);
	/* A port that was just free: nothing listens there any more. */
	lfd = listen_any("127.0.0.1:0", false, &la);
	close(lfd);
	cfd = sock_connect(&la, NULL, 0);
	if (cfd == -1) {
		assert_int_equal(errno, ECONNREFUSED);
		return;
	}
	wait_fd(cfd, POLLOUT);
	assert_int_equal(sock_connect_error(cfd), ECONNREFUSED);
	close(cfd);
}

static void
test_listen_v6only_and_reuseport(void **state)
{
	struct addr	la, v4;
	int		lfd, lfd2, lfd3;

	(void)state;
	lfd = listen_any("[::1]:0", true, &la);
	assert_int_equal(intopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY), 1);
	assert_int_equal(intopt(lfd, SOL_SOCKET, SO_REUSEPORT), 1);
	/* A second listener on the same port shares it... */
	lfd2 = sock_listen(&la, true, 16);
	assert_true(lfd2 >= 0);
	close(lfd2);
	/* ...but not without SO_REUSEPORT. */
	assert_int_equal(sock_listen(&la, false, 16), -1);
	assert_int_equal(errno, EADDRINUSE);
	/* V6ONLY: the same port on IPv4 loopback is still free. */
	addr_from_ip(&v4, "127.0.0.1", addr_port(&la));
	lfd3 = sock_listen(&v4, false, 16);
	if (lfd3 == -1)
		assert_int_not_equal(errno, 0);	/* taken by someone else */
	else
		close(lfd3);
	close(lfd);
}

static void
test_bad_listen(void **state)
{
	struct addr	a;

	(void)state;
	/* Not a local address: EADDRNOTAVAIL, nothing leaked. */
	assert_int_equal(addr_parse(&a, "192.0.2.1:1"), 0);
	assert_int_equal(sock_listen(&a, false, 16), -1);
	assert_int_equal(errno, EADDRNOTAVAIL);
	memset(&a, 0, sizeof(a));
	assert_int_equal(sock_listen(&a, false, 16), -1);
	assert_int_equal(sock_connect(&a, NULL, 0), -1);
}

/* Lines on stderr mentioning needle while fn runs. */
static int
count_logged(void (*fn)(int), int arg, const char *needle)
{
	char		 buf[4096];
	const char	*p;
	ssize_t		 n;
	int		 mfd, saved, count = 0;

	fflush(stderr);
	assert_true((mfd = memfd_create("err", MFD_CLOEXEC)) >= 0);
	assert_true((saved = dup(2)) >= 0);
	assert_int_equal(dup2(mfd, 2), 2);
	fn(arg);
	fflush(stderr);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	n = pread(mfd, buf, sizeof(buf) - 1, 0);
	close(mfd);
	assert_true(n >= 0);
	buf[n] = '\0';
	for (p = buf; (p = strstr(p, needle)) != NULL; p++)
		count++;
	return count;
}

static void
set_bad_cc_thrice(int fd)
{
	assert_int_equal(sock_set_cc(fd, "no-such-cc"), -1);
	assert_int_equal(sock_set_cc(fd, "no-such-cc"), -1);
	assert_int_equal(sock_set_cc(fd, "other-bad-cc"), -1);
}

static void
test_congestion_control(void **state)
{
	struct addr	la;
	char		cc[32];
	socklen_t	len = sizeof(cc);
	int		lfd, fd;

	(void)state;
	lfd = listen_any("127.0.0.1:0", false, &la);
	fd = sock_connect(&la, "reno", 0);
	assert_true(fd >= 0);
	assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, &len),
	    0);
	assert_string_equal(cc, "reno");
	assert_int_equal(sock_set_cc(fd, ""), 0);
	assert_int_equal(sock_set_cc(fd, NULL), 0);
	/* Said once per process, with the fallback spelled out. */
	assert_int_equal(count_logged(set_bad_cc_thrice, fd,
	    "unavailable (No such file or directory); using the system default"),
	    1);
	close(fd);
	/* An unknown algorithm keeps the default and still connects. */
	fd = sock_connect(&la, "no-such-cc", 0);
	assert_true(fd >= 0);
	wait_fd(fd, POLLOUT);
	assert_int_equal(sock_connect_error(fd), 0);
	close(fd);
	close(lfd);
}

static void
test_mark(void **state)
{
	struct addr	la;
	int		lfd, fd;

	(void)state;
	lfd = listen_any("127.0.0.1:0", false, &la);
	fd = sock_connect(&la, NULL, 0x1234);
	if (geteuid() == 0) {
		assert_true(fd >= 0);
		assert_int_equal(intopt(fd, SOL_SOCKET, SO_MARK), 0x1234);
		close(fd);
	} else {
		/* Unmarked would loop through the TUN: refused outright. */
		assert_int_equal(fd, -1);
		assert_int_equal(errno, EPERM);
	}
	fd = sock_connect(&la, NULL, 0);
	assert_true(fd >= 0);
	assert_int_equal(intopt(fd, SOL_SOCKET, SO_MARK), 0);
	close(fd);
	close(lfd);
}

static void
test_set_nonblock(void **state)
{
	int	p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_false(fcntl(p[0], F_GETFL) & O_NONBLOCK);
	assert_int_equal(sock_set_nonblock(p[0]), 0);
	assert_true(fcntl(p[0], F_GETFL) & O_NONBLOCK);
	assert_int_equal(sock_set_nonblock(p[0]), 0);
	close(p[0]);
	close(p[1]);
	assert_int_equal(sock_set_nonblock(p[0]), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_listen_connect_v4),
		cmocka_unit_test(test_connect_refused),
		cmocka_unit_test(test_listen_v6only_and_reuseport),
		cmocka_unit_test(test_bad_listen),
		cmocka_unit_test(test_congestion_control),
		cmocka_unit_test(test_mark),
		cmocka_unit_test(test_set_nonblock),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
