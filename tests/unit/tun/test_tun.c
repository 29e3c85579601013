/*
 * tun_open on Linux.  Needs root and /dev/net/tun, otherwise skipped
 * (exit 77).  Everything happens in a fresh network namespace created by
 * this process, so the host's interfaces are never touched, and the only
 * traffic sent goes to an address inside that namespace.
 */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <ifaddrs.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <linux/if_tun.h>

#include "tun.h"

static struct tun_prefix	addr4, addr6;

static int
open_named(const char *name, unsigned mtu, char ifname[IFNAMSIZ], char *err,
    size_t errlen)
{
	struct tun_config	tc = { .name = name, .mtu = mtu };

	return tun_open(&tc, ifname, err, errlen);
}

static int
ifreq_ioctl(unsigned long req, const char *ifname, struct ifreq *ifr)
{
	int	s, rc;

	memset(ifr, 0, sizeof(*ifr));
	snprintf(ifr->ifr_name, sizeof(ifr->ifr_name), "%s", ifname);
	assert_true((s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) >= 0);
	rc = ioctl(s, req, ifr);
	close(s);
	return rc;
}

static bool
has_addr6(const char *ifname, const struct tun_prefix *c)
{
	struct ifaddrs		*ifa, *i;
	struct sockaddr_in6	*sin6;
	bool			 found = false;

	assert_int_equal(getifaddrs(&ifa), 0);
	for (i = ifa; i != NULL; i = i->ifa_next) {
		if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET6 ||
		    strcmp(i->ifa_name, ifname) != 0)
			continue;
		sin6 = (struct sockaddr_in6 *)(void *)i->ifa_addr;
		if (memcmp(&sin6->sin6_addr, c->bytes, 16) == 0)
			found = true;
	}
	freeifaddrs(ifa);
	return found;
}

static void
check_addr4(const char *ifname)
{
	struct ifreq		 ifr;
	struct sockaddr_in	*sin = (struct sockaddr_in *)(void *)&ifr.ifr_addr;

	assert_int_equal(ifreq_ioctl(SIOCGIFADDR, ifname, &ifr), 0);
	assert_memory_equal(&sin->sin_addr, addr4.bytes, 4);
	assert_int_equal(ifreq_ioctl(SIOCGIFNETMASK, ifname, &ifr), 0);
	assert_int_equal(ntohl(sin->sin_addr.s_addr), 0xffffff00U);
}

/* A datagram to a neighbour on the TUN's subnet comes out of the fd,
 * after hdr bytes of virtio-net header when the fd has offloads. */
static void
check_packet_hdr(int fd, size_t hdr)
{
	struct sockaddr_in	dst = { .sin_family = AF_INET,
				    .sin_port = htons(9) };
	struct pollfd		pfd = { .fd = fd, .events = POLLIN };
	uint8_t			pkt[2048];
	ssize_t			n;
	int			s;

	assert_int_equal(inet_pton(AF_INET, "10.99.0.2", &dst.sin_addr), 1);
	assert_true((s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) >= 0);
	assert_int_equal(sendto(s, "ping", 4, 0, (struct sockaddr *)&dst,
	    sizeof(dst)), 4);
	close(s);
	/* Nonblocking fd: nothing was read before poll said so. */
	for (;;) {
		assert_int_equal(poll(&pfd, 1, 2000), 1);
		n = read(fd, pkt, sizeof(pkt));
		assert_true(n > (ssize_t)hdr);
		memmove(pkt, pkt + hdr, (size_t)n - hdr);
		n -= (ssize_t)hdr;
		/* Skip anything else the kernel sends (IPv6 router
		 * solicitations and the like): no packet-info header, so
		 * byte 0 is the IP version. */
		if ((pkt[0] >> 4) == 4 && pkt[9] == IPPROTO_UDP)
			break;
	}
	assert_int_equal(n, 20 + 8 + 4);
	assert_memory_equal(pkt + 16, &dst.sin_addr, 4);
	assert_memory_equal(pkt + 28, "ping", 4);
}

static void
check_packet_out(int fd)
{
	check_packet_hdr(fd, 0);
}

static void
test_open_configures(void **state)
{
	struct tun_config	tc = { .name = "tstest0", .mtu = 1400,
				    .addr4 = &addr4, .addr6 = &addr6 };
	struct ifreq		ifr;
	char			ifname[IFNAMSIZ], err[256];
	int			fd;

	(void)state;
	fd = tun_open(&tc, ifname, err, sizeof(err));
	if (fd == -1)
		fail_msg("tun_open: %s", err);
	assert_string_equal(ifname, "tstest0");
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(ifreq_ioctl(SIOCGIFMTU, ifname, &ifr), 0);
	assert_int_equal(ifr.ifr_mtu, 1400);
	assert_int_equal(ifreq_ioctl(SIOCGIFFLAGS, ifname, &ifr), 0);
	assert_true(ifr.ifr_flags & IFF_UP);
	check_addr4(ifname);
	assert_true(has_addr6(ifname, &addr6));
	check_packet_out(fd);
	close(fd);
	/* Not persistent: gone with its fd. */
	assert_int_equal(if_nametoindex("tstest0"), 0);
}

/* Offloads asked for: a virtio-net header on every packet; refused
 * (the test knob): the same device without. */
static void
test_offload_and_fallback(void **state)
{
	struct tun_config	tc = { .name = "tsoff0", .mtu = 1500,
				    .addr4 = &addr4, .offload = true };
	char			ifname[IFNAMSIZ], err[256];
	int			fd;

	(void)state;
	if ((fd = tun_open(&tc, ifname, err, sizeof(err))) == -1)
		fail_msg("tun_open: %s", err);
	assert_true(tun_offload(fd));
	check_packet_hdr(fd, TUN_VNET_HDR_LEN);
	close(fd);
	assert_int_equal(setenv(TUN_ENV_NO_OFFLOAD, "1", 1), 0);
	fd = tun_open(&tc, ifname, err, sizeof(err));
	assert_int_equal(unsetenv(TUN_ENV_NO_OFFLOAD), 0);
	if (fd == -1)
		fail_msg("tun_open: %s", err);
	assert_string_equal(ifname, "tsoff0");
	assert_false(tun_offload(fd));
	check_packet_out(fd);
	close(fd);
	tc.offload = false;
	if ((fd = tun_open(&tc, ifname, err, sizeof(err))) == -1)
		fail_msg("tun_open: %s", err);
	assert_false(tun_offload(fd));
	close(fd);
}

static void
test_template_and_default_name(void **state)
{
	char	ifname[IFNAMSIZ], ifname2[IFNAMSIZ], err[256];
	int	fd, fd2;

	(void)state;
	fd = open_named("tsx%d", 1500, ifname, err, sizeof(err));
	assert_true(fd >= 0);
	assert_string_equal(ifname, "tsx0");
	fd2 = open_named(NULL, TUN_MTU_MAX, ifname2, err, sizeof(err));
	assert_true(fd2 >= 0);
	assert_int_equal(strncmp(ifname2, "tun", 3), 0);
	close(fd);
	close(fd2);
	fd = open_named("tsmin", TUN_MTU_MIN, ifname, err, sizeof(err));
	assert_true(fd >= 0);
	close(fd);
}

static void
expect_error(const struct tun_config *tc, const char *want)
{
	char	ifname[IFNAMSIZ], err[256];

	memset(err, 'X', sizeof(err));
	assert_int_equal(tun_open(tc, ifname, err, sizeof(err)), -1);
	if (strstr(err, want) == NULL)
		fail_msg("error '%s' lacks '%s'", err, want);
}

static void
expect_name_error(const char *name, const char *want)
{
	struct tun_config	tc = { .name = name, .mtu = 1500 };

	expect_error(&tc, want);
}

static void
test_bad_names(void **state)
{
	char	ifname[IFNAMSIZ], err[256];
	int	fd;

	(void)state;
	expect_name_error("abcdefghijklmnop",
	    "interface name 'abcdefghijklmnop' is too long (max 15)");
	expect_name_error("", "is invalid");
	expect_name_error(".", "is invalid");
	expect_name_error("..", "is invalid");
	expect_name_error("a/b", "is invalid");
	expect_name_error("a:b", "is invalid");
	expect_name_error("a b", "is invalid");
	expect_name_error("a\tb", "is invalid");
	expect_name_error("t%s", "is invalid");
	expect_name_error("t%d%d", "is invalid");
	expect_name_error("t%", "is invalid");
	/* Exactly 15 is fine. */
	fd = open_named("abcdefghijklmno", 1500, ifname, err, sizeof(err));
	assert_true(fd >= 0);
	assert_string_equal(ifname, "abcdefghijklmno");
	close(fd);
}

static void
test_bad_mtu_and_addresses(void **state)
{
	struct tun_config	tc = { .name = "tsbad", .mtu = 70000 };

	(void)state;
	expect_error(&tc, "MTU 70000 out of range (576..65535)");
	tc.mtu = 575;
	expect_error(&tc, "MTU 575 out of range (576..65535)");
	tc.mtu = 0;
	expect_error(&tc, "MTU 0 out of range");
	tc.mtu = 1000;
	tc.addr6 = &addr6;
	expect_error(&tc, "below the IPv6 minimum 1280");
	tc.mtu = 1500;
	tc.addr6 = &addr4;
	expect_error(&tc, "not an IPv6 prefix");
	tc.addr6 = NULL;
	tc.addr4 = &addr6;
	expect_error(&tc, "not an IPv4 prefix");
	/* Nothing was created along the way. */
	assert_int_equal(if_nametoindex("tsbad"), 0);
}

static void
test_busy(void **state)
{
	char	ifname[IFNAMSIZ], ifname2[IFNAMSIZ], err[256];
	int	fd;

	(void)state;
	fd = open_named("tsbusy", 1500, ifname, err, sizeof(err));
	assert_true(fd >= 0);
	assert_int_equal(open_named("tsbusy", 1500, ifname2, err,
	    sizeof(err)), -1);
	assert_string_equal(err, "interface 'tsbusy' is busy or not a tun device");
	/* The first one is untouched. */
	assert_true(if_nametoindex("tsbusy") > 0);
	close(fd);
	/* An existing device of another kind. */
	expect_name_error("lo", "interface 'lo' is busy or not a tun device");
}

static void
test_small_error_buffer(void **state)
{
	struct tun_config	tc = { .name = "tsx", .mtu = 70000 };
	char			ifname[IFNAMSIZ], err[8];

	(void)state;
	memset(err, 'X', sizeof(err));
	assert_int_equal(tun_open(&tc, ifname, err, sizeof(err)), -1);
	assert_string_equal(err, "MTU 700");
	assert_int_equal(tun_open(&tc, ifname, NULL, 0), -1);
}

/* N queues: one device, every fd non-blocking, close-on-exec, with the
 * device's flags and virtio-net header; gone with the last fd. */
static void
test_queues(void **state)
{
	struct tun_config	tc = { .name = "tsmq0", .mtu = 1500,
				    .addr4 = &addr4, .offload = true,
				    .queues = 3 };
	struct ifreq		ifr;
	char			ifname[IFNAMSIZ], err[256];
	int			fds[4], i, hdrsz;

	(void)state;
	if (tun_open_queues(&tc, fds, 4, ifname, err, sizeof(err)) != 3)
		fail_msg("tun_open_queues: %s", err);
	assert_string_equal(ifname, "tsmq0");
	for (i = 0; i < 3; i++) {
		assert_true(fcntl(fds[i], F_GETFL) & O_NONBLOCK);
		assert_true(fcntl(fds[i], F_GETFD) & FD_CLOEXEC);
		memset(&ifr, 0, sizeof(ifr));
		assert_int_equal(ioctl(fds[i], TUNGETIFF, &ifr), 0);
		assert_true(ifr.ifr_flags & IFF_MULTI_QUEUE);
		assert_true(tun_offload(fds[i]));
		assert_int_equal(ioctl(fds[i], TUNGETVNETHDRSZ, &hdrsz), 0);
		assert_int_equal(hdrsz, TUN_VNET_HDR_LEN);
	}
	assert_int_equal(ifreq_ioctl(SIOCGIFFLAGS, ifname, &ifr), 0);
	assert_true(ifr.ifr_flags & IFF_UP);
	check_addr4(ifname);
	/* The device lives while any queue does. */
	close(fds[0]);
	close(fds[1]);
	assert_true(if_nametoindex("tsmq0") > 0);
	close(fds[2]);
	assert_int_equal(if_nametoindex("tsmq0"), 0);

	/* 0 and 1: today's single-queue device. */
	tc.offload = false;
	for (tc.queues = 0; tc.queues <= 1; tc.queues++) {
		if (tun_open_queues(&tc, fds, 1, ifname, err, sizeof(err)) != 1)
			fail_msg("tun_open_queues: %s", err);
		memset(&ifr, 0, sizeof(ifr));
		assert_int_equal(ioctl(fds[0], TUNGETIFF, &ifr), 0);
		assert_false(ifr.ifr_flags & IFF_MULTI_QUEUE);
		close(fds[0]);
	}
}

static void
test_queues_refused(void **state)
{
	struct tun_config	tc = { .name = "tsmq1", .mtu = 1500,
				    .queues = 4 };
	char			ifname[IFNAMSIZ], err[256];
	int			fds[4], fd;

	(void)state;
	assert_int_equal(tun_open_queues(&tc, fds, 3, ifname, err,
	    sizeof(err)), -1);
	assert_string_equal(err, "4 queues: no room for their fds");
	tc.queues = TUN_QUEUES_MAX + 1;
	assert_int_equal(tun_open_queues(&tc, fds, 4, ifname, err,
	    sizeof(err)), -1);
	assert_string_equal(err, "257 queues: more than the kernel's 256");
	assert_int_equal(if_nametoindex("tsmq1"), 0);
	/* A name a single-queue device holds: refused, that one kept. */
	fd = open_named("tsmq1", 1500, ifname, err, sizeof(err));
	assert_true(fd >= 0);
	tc.queues = 2;
	assert_int_equal(tun_open_queues(&tc, fds, 4, ifname, err,
	    sizeof(err)), -1);
	assert_string_equal(err, "interface 'tsmq1' exists already (a "
	    "multi-queue TUN must be tunsplit's own)");
	assert_true(if_nametoindex("tsmq1") > 0);
	close(fd);
	assert_int_equal(if_nametoindex("tsmq1"), 0);
}

/* Without CAP_NET_ADMIN (uid nobody in a child) the error says so. */
static void
test_permission_denied(void **state)
{
	char	ifname[IFNAMSIZ], err[256];
	pid_t	pid;
	int	status;

	(void)state;
	assert_true((pid = fork()) >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) == -1 || setgid(65534) == -1 ||
		    setuid(65534) == -1)
			_exit(2);
		if (open_named("tsperm", 1500, ifname, err, sizeof(err)) != -1)
			_exit(3);
		fprintf(stderr, "as nobody: %s\n", err);
		_exit(strstr(err, "permission denied (need CAP_NET_ADMIN)") ?
		    0 : 4);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_configures),
		cmocka_unit_test(test_offload_and_fallback),
		cmocka_unit_test(test_template_and_default_name),
		cmocka_unit_test(test_bad_names),
		cmocka_unit_test(test_bad_mtu_and_addresses),
		cmocka_unit_test(test_busy),
		cmocka_unit_test(test_small_error_buffer),
		cmocka_unit_test(test_permission_denied),
		cmocka_unit_test(test_queues),
		cmocka_unit_test(test_queues_refused),
	};

	if (geteuid() != 0 || access("/dev/net/tun", R_OK | W_OK) != 0) {
		fprintf(stderr, "skip: needs root and /dev/net/tun\n");
		return 77;
	}
	if (unshare(CLONE_NEWNET) == -1) {
		fprintf(stderr, "skip: unshare(CLONE_NEWNET): %s\n",
		    strerror(errno));
		return 77;
	}
	addr4.family = AF_INET;
	addr4.prefix = 24;
	addr6.family = AF_INET6;
	addr6.prefix = 64;
	if (inet_pton(AF_INET, "10.99.0.1", addr4.bytes) != 1 ||
	    inet_pton(AF_INET6, "fd00:99::1", addr6.bytes) != 1)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
