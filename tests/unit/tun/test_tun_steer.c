/*
 * tun_steer: the eBPF program that spreads a multi-queue TUN's packets
 * over its queues, and tun_steer_queue(), its C twin.
 *
 * The twin's rules and the spread of its hash need nothing; the kernel's
 * side needs root (a network namespace of our own, the device, bpf(2)),
 * else those tests are skipped: crafted and random packets are written
 * into a steered 4-queue (and 3-queue) device through a packet socket,
 * and each must come out of the queue the twin names.
 */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "tun.h"

#define Q16	65536	/* queues: the twin gives the whole u16 */

static bool	root;

/* A deterministic generator (Knuth's MMIX LCG, high bits), so a run is
 * the same every time. */
static uint64_t	rng = 1;

static uint32_t
rnd(void)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(rng >> 32);
}

static void
put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* IPv4 with ihl words of header (options zero), proto, the fragment
 * field, 10.1.x.y addresses from a, b, ports, 8 bytes of payload. */
static size_t
mk4(uint8_t *p, unsigned ihl, unsigned proto, unsigned frag, uint32_t a,
    uint32_t b, unsigned sport, unsigned dport)
{
	size_t	hl = ihl * 4, len = hl + 8 + 8;

	memset(p, 0, len);
	p[0] = (uint8_t)(0x40 | ihl);
	put16(p + 2, (unsigned)len);
	put16(p + 6, frag);
	p[8] = 64;
	p[9] = (uint8_t)proto;
	memcpy(p + 12, &a, 4);
	memcpy(p + 16, &b, 4);
	put16(p + hl, sport);
	put16(p + hl + 2, dport);
	return len;
}

/* IPv6 with next header nh, addresses from a and b (every byte), ports. */
static size_t
mk6(uint8_t *p, unsigned nh, uint32_t a, uint32_t b, unsigned sport,
    unsigned dport)
{
	unsigned	i;

	memset(p, 0, 56);
	p[0] = 0x60;
	put16(p + 4, 16);
	p[6] = (uint8_t)nh;
	p[7] = 64;
	for (i = 0; i < 16; i++) {
		p[8 + i] = (uint8_t)(a >> (i % 4 * 8)) ^ (uint8_t)i;
		p[24 + i] = (uint8_t)(b >> (i % 4 * 8)) ^ (uint8_t)(i * 7);
	}
	put16(p + 40, sport);
	put16(p + 42, dport);
	return 56;
}

/* Queue 0, whatever the queues, for every port in a range. */
static void
all_zero_4(unsigned ihl, unsigned proto, unsigned frag, unsigned dport)
{
	uint8_t		p[128];
	unsigned	sport, q;
	size_t		len;

	for (sport = 1000; sport < 1200; sport++) {
		len = mk4(p, ihl, proto, frag, rnd(), rnd(), sport, dport);
		for (q = 2; q <= 8; q++)
			assert_int_equal(tun_steer_queue(p, len, q), 0);
		assert_int_equal(tun_steer_queue(p, len, Q16), 0);
	}
}

static void
all_zero_6(unsigned nh, unsigned dport)
{
	uint8_t		p[128];
	unsigned	sport;
	size_t		len;

	for (sport = 1000; sport < 1200; sport++) {
		len = mk6(p, nh, rnd(), rnd(), sport, dport);
		assert_int_equal(tun_steer_queue(p, len, Q16), 0);
	}
}

static void
test_twin_queue_zero(void **state)
{
	uint8_t		p[128];
	unsigned	sport, nonzero = 0;
	size_t		len, cut;

	(void)state;
	all_zero_4(5, 17, 0, 53);	/* DNS */
	all_zero_4(5, 6, 0x4000, 53);	/* DNS over TCP, DF */
	all_zero_4(7, 17, 0, 53);	/* ... past options */
	all_zero_4(5, 17, 0x2000, 9000);	/* first fragment */
	all_zero_4(5, 17, 0x0010, 9000);	/* a later one */
	all_zero_4(5, 17, 0x0010 | 0x2000, 9000);
	all_zero_4(5, 1, 0, 9000);	/* ICMP */
	all_zero_4(5, 47, 0, 9000);	/* GRE */
	all_zero_4(4, 17, 0, 9000);	/* IHL below 5 */
	all_zero_6(17, 53);
	all_zero_6(6, 53);
	all_zero_6(44, 9000);		/* fragment header */
	all_zero_6(0, 9000);		/* hop-by-hop */
	all_zero_6(60, 9000);		/* destination options */
	all_zero_6(58, 9000);		/* ICMPv6 */
	/* Not IP at all, or nothing. */
	len = mk4(p, 5, 17, 0, 1, 2, 1000, 9000);
	p[0] = 0x55;
	assert_int_equal(tun_steer_queue(p, len, Q16), 0);
	assert_int_equal(tun_steer_queue(p, 0, Q16), 0);
	/* Cut before the last byte of the ports: the program's load fails,
	 * and so does the twin's. */
	for (cut = 0; cut < 24; cut++) {
		len = mk4(p, 5, 17, 0, 1, 2, 1000, 9000);
		assert_int_equal(tun_steer_queue(p, cut, Q16), 0);
	}
	for (cut = 0; cut < 44; cut++) {
		len = mk6(p, 6, 1, 2, 1000, 9000);
		assert_int_equal(tun_steer_queue(p, cut, Q16), 0);
	}
	/* DF alone is no fragment: flows with it spread. */
	for (sport = 1000; sport < 1064; sport++) {
		len = mk4(p, 5, 6, 0x4000, 1, 2, sport, 443);
		nonzero += tun_steer_queue(p, len, 2) != 0;
	}
	assert_true(nonzero > 16 && nonzero < 48);
	/* One queue: always 0. */
	assert_int_equal(tun_steer_queue(p, len, 1), 0);
	assert_int_equal(tun_steer_queue(p, len, 0), 0);
}

/* A flow's queue depends on its addresses and ports alone: not on TTL,
 * id, length, checksum, DF, options, payload or protocol. */
static void
test_twin_tuple_only(void **state)
{
	uint8_t		p[128], o[128];
	uint32_t	a, b;
	unsigned	i, sport, dport, h, changed = 0;
	size_t		len, olen;

	(void)state;
	for (i = 0; i < 1000; i++) {
		a = rnd(), b = rnd(), sport = rnd() & 0xffff;
		dport = 1024 + (rnd() & 0x7fff);
		len = mk4(p, 5, 17, 0, a, b, sport, dport);
		h = tun_steer_queue(p, len, Q16);
		olen = mk4(o, 5 + (rnd() & 7), 6, 0x4000, a, b, sport, dport);
		o[1] = 0x10, o[4] = 0x12, o[8] = 3, o[10] = 0xab;
		memset(o + olen - 8, 0x5a, 8);
		assert_int_equal(tun_steer_queue(o, olen, Q16), h);
		/* A byte less of payload. */
		assert_int_equal(tun_steer_queue(o, olen - 1, Q16), h);
		/* Any field of the tuple changes it (nearly always). */
		len = mk4(p, 5, 17, 0, a, b, sport ^ 1, dport);
		changed += tun_steer_queue(p, len, Q16) != h;
		len = mk6(p, 17, a, b, sport, dport);
		h = tun_steer_queue(p, len, Q16);
		len = mk6(o, 6, a, b, sport, dport);
		o[7] = 1;
		assert_int_equal(tun_steer_queue(o, len, Q16), h);
		o[23] ^= 0x80;			/* the source's last bit */
		changed += tun_steer_queue(o, len, Q16) != h;
	}
	assert_true(changed >= 1990);
}

/* Many flows spread evenly over 2 to 8 queues: random tuples, and one
 * client's ephemeral ports in a row to one server. */
static void
test_twin_spread(void **state)
{
	uint8_t		p[128];
	unsigned	count[8], q, i, n = 16000, fam;
	size_t		len;

	(void)state;
	for (fam = 0; fam < 3; fam++)
		for (q = 2; q <= 8; q++) {
			memset(count, 0, sizeof(count));
			for (i = 0; i < n; i++) {
				if (fam == 0)
					len = mk4(p, 5, 6, 0, rnd(), rnd(),
					    rnd() & 0xffff, 443);
				else if (fam == 1)
					len = mk6(p, 17, rnd(), rnd(),
					    rnd() & 0xffff, 443);
				else
					len = mk4(p, 5, 6, 0, 0x0101a8c0,
					    0x01020304, 32768 + i, 443);
				count[tun_steer_queue(p, len, q)]++;
			}
			for (i = 0; i < q; i++)
				if (count[i] < n / q * 9 / 10 ||
				    count[i] > n / q * 11 / 10)
					fail_msg("family %u, %u queues: queue "
					    "%u got %u of %u", fam, q, i,
					    count[i], n);
		}
}

/* ---- the kernel -------------------------------------------------------- */

/* A random packet near the program's edges: sometimes well formed,
 * sometimes cut short, with options, fragments, other protocols. */
static size_t
mk_random(uint8_t *p)
{
	static const unsigned	protos[] = { 6, 17, 1, 0, 44, 58, 60, 47 };
	static const unsigned	ports[] = { 53, 443, 0, 65535 };
	unsigned		proto = protos[rnd() % 8];
	unsigned		sport = rnd() & 0xffff, dport;
	size_t			len;

	dport = rnd() % 3 == 0 ? ports[rnd() % 4] : rnd() & 0xffff;
	switch (rnd() % 4) {
	case 0:
		len = mk4(p, 5 + rnd() % 11 * (rnd() % 2), proto,
		    rnd() % 3 == 0 ? rnd() & 0xffff : 0x4000, rnd(), rnd(),
		    sport, dport);
		break;
	case 1:
		len = mk4(p, rnd() % 16, proto, rnd() & 0xffff, rnd(), rnd(),
		    sport, dport);
		break;
	case 2:
		len = mk6(p, proto, rnd(), rnd(), sport, dport);
		break;
	default:
		len = 1 + rnd() % 64;
		for (size_t i = 0; i < len; i++)
			p[i] = (uint8_t)rnd();
		break;
	}
	if (rnd() % 4 == 0)
		len = 1 + rnd() % len;
	return len;
}

/* Writes p into the device ifindex (as the host would send it) and
 * reads it back from the queue the program chose, which must be the
 * twin's; the kernel's own packets met on the way must obey too. */
static void
send_and_find(int ps, int ifindex, const int *fds, unsigned nq,
    const uint8_t *p, size_t len)
{
	struct sockaddr_ll	sll;
	struct pollfd		pfd[8];
	uint8_t			buf[2048];
	unsigned		q;
	ssize_t			n;

	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_ifindex = ifindex;
	sll.sll_protocol = htons(len > 0 && p[0] >> 4 == 6 ? ETH_P_IPV6 :
	    ETH_P_IP);
	if (sendto(ps, p, len, 0, (struct sockaddr *)&sll, sizeof(sll)) !=
	    (ssize_t)len)
		fail_msg("sendto %zu bytes: %s", len, strerror(errno));
	for (q = 0; q < nq; q++) {
		pfd[q].fd = fds[q];
		pfd[q].events = POLLIN;
	}
	for (;;) {
		if (poll(pfd, nq, 2000) <= 0)
			fail_msg("a %zu-byte packet never came out", len);
		for (q = 0; q < nq; q++) {
			if ((n = read(fds[q], buf, sizeof(buf))) < 0)
				continue;
			assert_int_equal(q, tun_steer_queue(buf, (size_t)n,
			    nq));
			if ((size_t)n == len && memcmp(buf, p, len) == 0)
				return;
		}
	}
}

static void
kernel_twin(unsigned nq)
{
	struct tun_config	tc = { .mtu = 1500, .queues = nq,
				    .steer = true };
	char			name[IFNAMSIZ], ifname[IFNAMSIZ], err[512];
	uint8_t			p[128];
	unsigned		i, q;
	int			fds[8], ps, ifindex;
	size_t			len;

	if (!root)
		skip();
	/* A name per test: a failed one leaves its device behind. */
	snprintf(name, sizeof(name), "tsst%uq", nq);
	tc.name = name;
	if (tun_open_queues(&tc, fds, 8, ifname, err, sizeof(err)) !=
	    (int)nq)
		fail_msg("tun_open_queues: %s", err);
	ifindex = (int)if_nametoindex(ifname);
	assert_true((ps = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC,
	    0)) >= 0);
	/* DNS and fragments from many ports, then flows, then the rest. */
	for (i = 0; i < 64; i++) {
		len = mk4(p, 5, 17, 0, rnd(), rnd(), 1024 + i, 53);
		send_and_find(ps, ifindex, fds, nq, p, len);
		len = mk4(p, 6, 17, 0x2000, rnd(), rnd(), 1024 + i, 9000);
		send_and_find(ps, ifindex, fds, nq, p, len);
		len = mk6(p, 44, rnd(), rnd(), 1024 + i, 9000);
		send_and_find(ps, ifindex, fds, nq, p, len);
	}
	for (i = 0; i < 256; i++) {
		len = i % 2 ? mk4(p, 5 + i % 3, 6, 0x4000, rnd(), rnd(),
		    rnd() & 0xffff, 443) : mk6(p, 17, rnd(), rnd(),
		    rnd() & 0xffff, 443);
		send_and_find(ps, ifindex, fds, nq, p, len);
	}
	for (i = 0; i < 2000; i++) {
		len = mk_random(p);
		send_and_find(ps, ifindex, fds, nq, p, len);
	}
	close(ps);
	for (q = 0; q < nq; q++)
		close(fds[q]);
	assert_int_equal(if_nametoindex(name), 0);
}

static void
test_kernel_4_queues(void **state)
{
	(void)state;
	kernel_twin(4);
}

static void
test_kernel_3_queues(void **state)
{
	(void)state;
	kernel_twin(3);
}

/* The test knob: refused, saying so; nothing left behind. */
static void
test_knob(void **state)
{
	struct tun_config	tc = { .name = "tsst1", .mtu = 1500,
				    .queues = 2, .steer = true };
	char			ifname[IFNAMSIZ], err[512];
	int			fds[2];

	(void)state;
	if (!root)
		skip();
	assert_int_equal(setenv(TUN_ENV_NO_STEER, "1", 1), 0);
	assert_int_equal(tun_open_queues(&tc, fds, 2, ifname, err,
	    sizeof(err)), -1);
	assert_int_equal(unsetenv(TUN_ENV_NO_STEER), 0);
	assert_string_equal(err, "steering 2 queues: refused for the test "
	    "(TUNSPLIT_TUN_NO_STEER is set)");
	assert_int_equal(if_nametoindex("tsst1"), 0);
}

/* Where bpf(2) needs privileges, nobody is told which. */
static void
test_permission(void **state)
{
	struct tun_config	tc = { .name = "tsst2", .mtu = 1500,
				    .queues = 2 };
	char			ifname[IFNAMSIZ], err[512];
	FILE			*f;
	pid_t			pid;
	int			fds[2], status, unpriv = 0;

	(void)state;
	if (!root)
		skip();
	if ((f = fopen("/proc/sys/kernel/unprivileged_bpf_disabled", "r")) !=
	    NULL) {
		if (fscanf(f, "%d", &unpriv) != 1)
			unpriv = 0;
		fclose(f);
	}
	if (unpriv == 0)
		skip();		/* anyone may load a socket filter here */
	if (tun_open_queues(&tc, fds, 2, ifname, err, sizeof(err)) != 2)
		fail_msg("tun_open_queues: %s", err);
	assert_true((pid = fork()) >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) == -1 || setgid(65534) == -1 ||
		    setuid(65534) == -1)
			_exit(2);
		if (tun_steer(fds[1], 2, err, sizeof(err)) != -1)
			_exit(3);
		fprintf(stderr, "as nobody: %s\n", err);
		_exit(strstr(err, "permission denied (need CAP_BPF") ? 0 : 4);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(fds[0]);
	close(fds[1]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_twin_queue_zero),
		cmocka_unit_test(test_twin_tuple_only),
		cmocka_unit_test(test_twin_spread),
		cmocka_unit_test(test_kernel_4_queues),
		cmocka_unit_test(test_kernel_3_queues),
		cmocka_unit_test(test_knob),
		cmocka_unit_test(test_permission),
	};

	root = geteuid() == 0 && access("/dev/net/tun", R_OK | W_OK) == 0;
	if (root && unshare(CLONE_NEWNET) == -1) {
		fprintf(stderr, "unshare(CLONE_NEWNET): %s: kernel tests "
		    "skipped\n", strerror(errno));
		root = false;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
