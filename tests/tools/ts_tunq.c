/*
 * ts_tunq: opens a multi-queue TUN with tun_open_queues(), steered by
 * tun_steer() before it is up, and says which queue read each packet the
 * host sent into it, for tests/netns/e2e/e2e_tun_steer.sh.
 *
 *   ts_tunq -q queues -o file [options]
 *     -i name     interface name (default tsq0)
 *     -O          offloads on (IFF_VNET_HDR): reads carry the 10-byte
 *                 virtio-net header, skipped
 *     -n          no steering (the kernel's own choice)
 *     -a a/len    IPv4 address of the device; -A a/len IPv6
 *     -r addr     route addr/32 into the device; -R addr the same, /128
 *     -o file     one line per packet read (below)
 *     -w file     created once the device is up, routed and steered
 *     -T seconds  give up after that long (default 30)
 *
 * Runs until SIGTERM, then reads what is left on every queue.  A line:
 *   "<queue> <expected> <v4|v6|?> <proto> <src> <sport> <dst> <dport>
 *    <frag> <len>"
 * expected is tun_steer_queue()'s answer for the packet (what the eBPF
 * program should have chosen); proto is IPv6's first next header; ports
 * are "-" where the packet has none to read (not TCP/UDP, or a fragment
 * past the first); frag is 1 for an IPv4 fragment or an IPv6 fragment
 * header.  On start, one line per queue on stderr: its flags and
 * virtio-net header size as the kernel reports them through that fd.
 * Exit 0; 3 when the steering fails (its message on stderr), 1 other
 * failures, 2 usage.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/if_tun.h>

#include "tun.h"

#define TUNQ_BUF	(65536 + TUN_VNET_HDR_LEN)

static volatile sig_atomic_t tunq_stop;

static void
tunq_on_term(int sig)
{
	(void)sig;
	tunq_stop = 1;
}

static int
tunq_prefix(const char *arg, int family, struct tun_prefix *p)
{
	char		 a[INET6_ADDRSTRLEN + 8], *slash;

	snprintf(a, sizeof(a), "%s", arg);
	memset(p, 0, sizeof(*p));
	p->family = family;
	p->prefix = family == AF_INET ? 32 : 128;
	if ((slash = strchr(a, '/')) != NULL) {
		*slash = '\0';
		p->prefix = (uint8_t)atoi(slash + 1);
	}
	return inet_pton(family, a, p->bytes) == 1 ? 0 : -1;
}

static unsigned
tunq_be16(const uint8_t *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

/* One line about packet p (from its IP header) read on queue q. */
static void
tunq_print(FILE *out, unsigned q, unsigned nq, const uint8_t *p, size_t len)
{
	char		 src[INET6_ADDRSTRLEN] = "?", dst[INET6_ADDRSTRLEN] = "?";
	char		 sport[8] = "-", dport[8] = "-";
	const char	*fam = "?";
	unsigned	 proto = 0, frag = 0, fo;
	size_t		 l4 = 0;

	if (len >= 20 && p[0] >> 4 == 4) {
		fam = "v4";
		proto = p[9];
		fo = tunq_be16(p + 6);
		frag = (fo & 0x3fff) != 0;
		inet_ntop(AF_INET, p + 12, src, sizeof(src));
		inet_ntop(AF_INET, p + 16, dst, sizeof(dst));
		if ((fo & 0x1fff) == 0)
			l4 = (size_t)(p[0] & 0x0f) * 4;
	} else if (len >= 40 && p[0] >> 4 == 6) {
		fam = "v6";
		proto = p[6];
		frag = proto == 44;
		inet_ntop(AF_INET6, p + 8, src, sizeof(src));
		inet_ntop(AF_INET6, p + 24, dst, sizeof(dst));
		l4 = 40;
	}
	if (l4 != 0 && (proto == 6 || proto == 17) && len >= l4 + 4) {
		snprintf(sport, sizeof(sport), "%u", tunq_be16(p + l4));
		snprintf(dport, sizeof(dport), "%u", tunq_be16(p + l4 + 2));
	}
	fprintf(out, "%u %u %s %u %s %s %s %s %u %zu\n", q,
	    tun_steer_queue(p, len, nq), fam, proto, src, sport, dst, dport,
	    frag, len);
}

/* Reads every queue until each would block. */
static int
tunq_drain(FILE *out, const int *fds, unsigned nq, size_t skip, uint8_t *buf)
{
	unsigned	q;
	ssize_t		r;
	bool		any = true;

	while (any) {
		any = false;
		for (q = 0; q < nq; q++) {
			if ((r = read(fds[q], buf, TUNQ_BUF)) < 0) {
				if (errno == EAGAIN || errno == EINTR)
					continue;
				perror("ts_tunq: read");
				return -1;
			}
			if ((size_t)r < skip)
				continue;
			tunq_print(out, q, nq, buf + skip, (size_t)r - skip);
			any = true;
		}
	}
	fflush(out);
	return 0;
}

static void
tunq_report_queues(const int *fds, unsigned nq)
{
	struct ifreq	ifr;
	unsigned	q;
	int		hdrsz;

	for (q = 0; q < nq; q++) {
		memset(&ifr, 0, sizeof(ifr));
		hdrsz = -1;
		(void)ioctl(fds[q], TUNGETIFF, &ifr);
		(void)ioctl(fds[q], TUNGETVNETHDRSZ, &hdrsz);
		fprintf(stderr, "queue %u flags 0x%x multi_queue %d vnet_hdr %d "
		    "vnet_hdr_sz %d\n", q, (unsigned)(uint16_t)ifr.ifr_flags,
		    (ifr.ifr_flags & IFF_MULTI_QUEUE) != 0,
		    (ifr.ifr_flags & IFF_VNET_HDR) != 0, hdrsz);
	}
}

static void
tunq_usage(void)
{
	fprintf(stderr, "usage: ts_tunq -q queues -o file [-i name] [-O] "
	    "[-n] [-a a/len] [-A a/len] [-r addr] [-R addr] [-w file] "
	    "[-T seconds]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	struct tun_config	 tc;
	struct tun_prefix	 a4, a6, r4, r6;
	struct pollfd		 pfd[TUN_QUEUES_MAX];
	struct sigaction	 sa;
	char			 ifname[IFNAMSIZ], err[512];
	const char		*outf = NULL, *readyf = NULL;
	const char		*route4 = NULL, *route6 = NULL;
	int			 fds[TUN_QUEUES_MAX], c, nq, q;
	bool			 steer = true;
	long			 limit = 30;
	time_t			 end;
	uint8_t			*buf;
	FILE			*out;

	memset(&tc, 0, sizeof(tc));
	tc.name = "tsq0";
	tc.mtu = 1500;
	while ((c = getopt(argc, argv, "q:i:Ona:A:r:R:o:w:T:")) != -1) {
		switch (c) {
		case 'q': tc.queues = (unsigned)atoi(optarg); break;
		case 'i': tc.name = optarg; break;
		case 'O': tc.offload = true; break;
		case 'n': steer = false; break;
		case 'a':
			if (tunq_prefix(optarg, AF_INET, &a4) == -1)
				tunq_usage();
			tc.addr4 = &a4;
			break;
		case 'A':
			if (tunq_prefix(optarg, AF_INET6, &a6) == -1)
				tunq_usage();
			tc.addr6 = &a6;
			break;
		case 'r': route4 = optarg; break;
		case 'R': route6 = optarg; break;
		case 'o': outf = optarg; break;
		case 'w': readyf = optarg; break;
		case 'T': limit = atol(optarg); break;
		default: tunq_usage();
		}
	}
	if (outf == NULL || tc.queues < 1 || tc.queues > TUN_QUEUES_MAX)
		tunq_usage();
	tc.steer = steer;
	if ((nq = tun_open_queues(&tc, fds, TUN_QUEUES_MAX, ifname, err,
	    sizeof(err))) == -1) {
		fprintf(stderr, "ts_tunq: %s\n", err);
		return strstr(err, "steer") != NULL ? 3 : 1;
	}
	fprintf(stderr, "ts_tunq: %s: %d queues, offload %d\n", ifname, nq,
	    tun_offload(fds[0]));
	tunq_report_queues(fds, (unsigned)nq);
	if ((route4 != NULL && (tunq_prefix(route4, AF_INET, &r4) == -1 ||
	    tun_add_route(ifname, &r4, err, sizeof(err)) == -1)) ||
	    (route6 != NULL && (tunq_prefix(route6, AF_INET6, &r6) == -1 ||
	    tun_add_route(ifname, &r6, err, sizeof(err)) == -1))) {
		fprintf(stderr, "ts_tunq: route: %s\n", err);
		return 1;
	}
	if ((out = fopen(outf, "w")) == NULL || (buf = malloc(TUNQ_BUF)) ==
	    NULL) {
		perror("ts_tunq");
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = tunq_on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (readyf != NULL && (c = open(readyf, O_WRONLY | O_CREAT | O_CLOEXEC,
	    0644)) != -1)
		close(c);
	for (q = 0; q < nq; q++) {
		pfd[q].fd = fds[q];
		pfd[q].events = POLLIN;
	}
	end = time(NULL) + limit;
	while (!tunq_stop && time(NULL) < end) {
		if (poll(pfd, (nfds_t)nq, 200) > 0 &&
		    tunq_drain(out, fds, (unsigned)nq, tc.offload &&
		    tun_offload(fds[0]) ? TUN_VNET_HDR_LEN : 0, buf) == -1)
			return 1;
	}
	if (tunq_drain(out, fds, (unsigned)nq, tc.offload &&
	    tun_offload(fds[0]) ? TUN_VNET_HDR_LEN : 0, buf) == -1)
		return 1;
	fclose(out);
	free(buf);
	for (q = 0; q < nq; q++)
		close(fds[q]);
	return 0;
}
