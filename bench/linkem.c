/*
 * linkem: a userspace link emulator between two TUN devices.
 *
 *   netns A                     linkem                        netns B
 *   [tun] --read--> bottleneck queue -> loss -> delay/jitter --write--> [tun]
 *   [tun] <--write-- delay/jitter <- loss <- bottleneck queue <--read-- [tun]
 *
 * The benchmark kernel has no netem, so the project carries its own
 * impairments.  One thread, no per-packet sleeps: each direction keeps a
 * FIFO ring of packets in delivery order, and epoll_pwait2() (or a timerfd
 * where the kernel lacks it) sleeps exactly until the earliest one is due.
 *
 * The bottleneck is a serial link of the configured rate with a bounded
 * drop-tail queue in front of it (a token bucket one packet deep).  A
 * packet's delivery time is computed once, on arrival, so the ring needs no
 * heap: without --reorder delivery times are clamped to be non-decreasing;
 * with it a packet is inserted from the tail, which moves it back only past
 * the few packets inside the jitter window.
 *
 * Loss is applied after the queue, as on a real path: a lost packet still
 * used its share of the bottleneck.
 *
 * The tool is standalone (no libtunsplit) so that it builds and runs with
 * nothing but libc; errors go through err(3).
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* setns(), CLONE_NEWNET, epoll_pwait2() */
#endif

#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>

#include <net/if.h>
#include <linux/if_tun.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NSEC		1000000000ULL
#define BATCH		64	/* packets per fd per wake-up: keeps both directions moving */
#define LATE_STEP_NS	10000ULL	/* lateness histogram: 10 us buckets ... */
#define LATE_BUCKETS	10000		/* ... up to 100 ms, then one overflow bucket */

struct conf {
	const char	*a_netns, *b_netns;
	const char	*a_name, *b_name;
	const char	*pidfile, *stats_path, *ctl_path;
	double		 delay_ms, jitter_ms, loss_pct;
	bool		 ge_on;
	double		 ge_pgb, ge_pbg, ge_lgood, ge_lbad;	/* all fractions */
	double		 rate_mbit;
	double		 queue_ms;
	uint64_t	 queue_bytes;
	uint64_t	 seed;
	int		 mtu;
	int		 txqlen;
	bool		 reorder;
	bool		 timerfd;	/* force the pre-5.11 wait path */
	uint32_t	 slots;
	int		 rtprio;
};

struct pkt {
	uint64_t	 due;	/* delivery time, CLOCK_MONOTONIC ns */
	uint32_t	 len;
	uint8_t		*data;	/* mtu bytes; allocated on first use, kept */
};

/* Power-of-two ring; head and tail run freely and are masked on use. */
struct ring {
	struct pkt	*slot;
	uint32_t	 mask;
	uint32_t	 head;
	uint32_t	 tail;
};

struct counters {
	uint64_t	 rx_pkts, rx_bytes;
	uint64_t	 fwd_pkts, fwd_bytes;
	uint64_t	 qdrop_pkts, qdrop_bytes;	/* bottleneck queue full */
	uint64_t	 loss_pkts, loss_bytes;		/* random + bursty loss */
	uint64_t	 ring_pkts, ring_bytes;		/* ring full */
	uint64_t	 werr_pkts, werr_bytes;		/* write to the TUN failed */
	uint64_t	 qmax_bytes;			/* deepest queue seen */
};

/* How late packets left versus their schedule: the emulator's own error. */
struct lateness {
	uint64_t	 n, sum_ns, max_ns;
	uint64_t	 hist[LATE_BUCKETS + 1];
};

struct dir {
	const char	*name;
	int		 in_fd, out_fd;
	struct ring	 ring;
	uint64_t	 rng[4];
	uint64_t	 link_free;	/* bottleneck busy until */
	uint64_t	 last_due;
	bool		 ge_bad;
	struct counters	 c;
	struct lateness	 late;
};

struct linkem {
	struct conf	 cf;
	struct dir	 d[2];
	uint64_t	 rate_bps;	/* 0: unlimited */
	uint64_t	 qlimit;	/* bytes */
	uint64_t	 delay_ns, jitter_ns;
	uint64_t	 since;		/* start of the counting period */
	uint8_t		*scratch;	/* drains the TUN when a ring is full */
	int		 ep, sigfd, tfd;
	uint64_t	 armed;		/* timerfd fallback: absolute expiry armed */
};

static uint64_t
mono_ns(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC + (uint64_t)ts.tv_nsec;
}

/* xoshiro256**, seeded through splitmix64: reproducible loss patterns. */
static uint64_t
rng_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static void
rng_seed(uint64_t s[4], uint64_t seed)
{
	int	i;

	for (i = 0; i < 4; i++) {
		uint64_t z = (seed += 0x9e3779b97f4a7c15ULL);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		s[i] = z ^ (z >> 31);
	}
}

static uint64_t
rng_next(uint64_t s[4])
{
	uint64_t	r = rng_rotl(s[1] * 5, 7) * 9;
	uint64_t	t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rng_rotl(s[3], 45);
	return r;
}

/* Uniform in [0, 1). */
static double
rng_unit(uint64_t s[4])
{
	return (double)(rng_next(s) >> 11) * 0x1.0p-53;
}

static void
usage(void)
{
	fprintf(stderr,
	    "usage: linkem [options]\n"
	    "  --a-netns NS --b-netns NS  namespaces of the two ends (name or path;\n"
	    "                             default: the current one)\n"
	    "  --a-name IF --b-name IF    TUN names (default lkA, lkB)\n"
	    "  --delay MS                 one-way delay, each direction\n"
	    "  --jitter MS                uniform +-MS on top of the delay\n"
	    "  --reorder                  let jitter reorder packets\n"
	    "  --loss PCT                 random loss, each direction\n"
	    "  --ge PGB,PBG,LGOOD,LBAD    Gilbert-Elliott loss, all in percent\n"
	    "  --rate MBIT                bottleneck rate, each direction (0: none)\n"
	    "  --queue MS                 drop-tail queue in time at --rate (100)\n"
	    "  --queue-bytes N            drop-tail queue in bytes (overrides --queue)\n"
	    "  --seed N                   random seed (1)\n"
	    "  --mtu N                    TUN MTU (1500)\n"
	    "  --txqlen N                 TUN transmit queue length (1000)\n"
	    "  --slots N                  ring capacity per direction (65536)\n"
	    "  --rtprio N                 run SCHED_FIFO at priority N\n"
	    "  --pidfile FILE             written once both TUNs are up\n"
	    "  --stats FILE               JSON counters, on SIGUSR1 and at exit\n"
	    "  --timerfd                  wait with a timerfd, not epoll_pwait2\n"
	    "  --ctl FILE                 on SIGHUP, apply the --loss, --ge,\n"
	    "                             --seed and --delay options in FILE\n"
	    "SIGUSR1 writes the counters and starts a new counting period;\n"
	    "SIGHUP changes the loss settings live (--ctl); SIGINT/SIGTERM\n"
	    "print the counters and exit.\n");
	exit(2);
}

static bool
num_ok(const char *s, double lo, double hi, double *v)
{
	char	*end;

	errno = 0;
	*v = strtod(s, &end);
	/* Written so that NaN fails too. */
	return errno == 0 && end != s && *end == '\0' && *v >= lo && *v <= hi;
}

static double
parse_num(const char *s, const char *what, double lo, double hi)
{
	double	 v;

	if (!num_ok(s, lo, hi, &v))
		errx(2, "bad %s \"%s\" (want %g..%g)", what, s, lo, hi);
	return v;
}

/* "PGB,PBG,LGOOD,LBAD" in percent; false (cf untouched) when malformed. */
static bool
ge_parse(struct conf *cf, const char *arg)
{
	double	 v[4];
	char	 buf[128], *p, *tok, *save = NULL;
	int	 i = 0;

	if (snprintf(buf, sizeof(buf), "%s", arg) >= (int)sizeof(buf))
		return false;
	for (p = buf; (tok = strtok_r(p, ",", &save)) != NULL; p = NULL) {
		if (i == 4 || !num_ok(tok, 0, 100, &v[i]))
			return false;
		v[i++] /= 100.0;
	}
	if (i != 4)
		return false;
	cf->ge_on = true;
	cf->ge_pgb = v[0];
	cf->ge_pbg = v[1];
	cf->ge_lgood = v[2];
	cf->ge_lbad = v[3];
	return true;
}

static void
conf_parse(struct conf *cf, int argc, char *argv[])
{
	enum { O_ANS = 256, O_BNS, O_ANAME, O_BNAME, O_DELAY, O_JITTER,
	    O_REORDER, O_LOSS, O_GE, O_RATE, O_QUEUE, O_QBYTES, O_SEED, O_MTU,
	    O_TXQ, O_SLOTS, O_RTPRIO, O_PID, O_STATS, O_TFD, O_CTL };
	static const struct option opts[] = {
		{ "a-netns", required_argument, NULL, O_ANS },
		{ "b-netns", required_argument, NULL, O_BNS },
		{ "a-name", required_argument, NULL, O_ANAME },
		{ "b-name", required_argument, NULL, O_BNAME },
		{ "delay", required_argument, NULL, O_DELAY },
		{ "jitter", required_argument, NULL, O_JITTER },
		{ "reorder", no_argument, NULL, O_REORDER },
		{ "loss", required_argument, NULL, O_LOSS },
		{ "ge", required_argument, NULL, O_GE },
		{ "rate", required_argument, NULL, O_RATE },
		{ "queue", required_argument, NULL, O_QUEUE },
		{ "queue-bytes", required_argument, NULL, O_QBYTES },
		{ "seed", required_argument, NULL, O_SEED },
		{ "mtu", required_argument, NULL, O_MTU },
		{ "txqlen", required_argument, NULL, O_TXQ },
		{ "slots", required_argument, NULL, O_SLOTS },
		{ "rtprio", required_argument, NULL, O_RTPRIO },
		{ "pidfile", required_argument, NULL, O_PID },
		{ "stats", required_argument, NULL, O_STATS },
		{ "timerfd", no_argument, NULL, O_TFD },
		{ "ctl", required_argument, NULL, O_CTL },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	double	 slots;
	int	 ch;

	memset(cf, 0, sizeof(*cf));
	cf->a_name = "lkA";
	cf->b_name = "lkB";
	cf->queue_ms = 100;
	cf->seed = 1;
	cf->mtu = 1500;
	cf->txqlen = 1000;
	cf->slots = 65536;

	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case O_ANS:	cf->a_netns = optarg; break;
		case O_BNS:	cf->b_netns = optarg; break;
		case O_ANAME:	cf->a_name = optarg; break;
		case O_BNAME:	cf->b_name = optarg; break;
		case O_DELAY:
			cf->delay_ms = parse_num(optarg, "--delay", 0, 10000);
			break;
		case O_JITTER:
			cf->jitter_ms = parse_num(optarg, "--jitter", 0, 10000);
			break;
		case O_REORDER:	cf->reorder = true; break;
		case O_LOSS:
			cf->loss_pct = parse_num(optarg, "--loss", 0, 100);
			break;
		case O_GE:
			if (!ge_parse(cf, optarg))
				errx(2, "bad --ge \"%s\" (want 4 percentages "
				    "PGB,PBG,LGOOD,LBAD)", optarg);
			break;
		case O_RATE:
			cf->rate_mbit = parse_num(optarg, "--rate", 0, 1e6);
			break;
		case O_QUEUE:
			cf->queue_ms = parse_num(optarg, "--queue", 0, 100000);
			break;
		case O_QBYTES:
			cf->queue_bytes = (uint64_t)parse_num(optarg,
			    "--queue-bytes", 1, 1e12);
			break;
		case O_SEED:
			cf->seed = (uint64_t)parse_num(optarg, "--seed", 0,
			    9007199254740992.0);
			break;
		case O_MTU:
			cf->mtu = (int)parse_num(optarg, "--mtu", 576, 65535);
			break;
		case O_TXQ:
			cf->txqlen = (int)parse_num(optarg, "--txqlen", 1,
			    1000000);
			break;
		case O_SLOTS:
			slots = parse_num(optarg, "--slots", 16, 1 << 24);
			cf->slots = (uint32_t)slots;
			break;
		case O_RTPRIO:
			cf->rtprio = (int)parse_num(optarg, "--rtprio", 1, 99);
			break;
		case O_PID:	cf->pidfile = optarg; break;
		case O_STATS:	cf->stats_path = optarg; break;
		case O_TFD:	cf->timerfd = true; break;
		case O_CTL:	cf->ctl_path = optarg; break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	if (strlen(cf->a_name) >= IFNAMSIZ || strlen(cf->b_name) >= IFNAMSIZ)
		errx(2, "interface name too long");
	/* Round the ring up to a power of two so indices can be masked. */
	while (cf->slots & (cf->slots - 1))
		cf->slots += cf->slots & -cf->slots;
}

static int
netns_open(const char *name)
{
	char	path[PATH_MAX];
	int	fd;

	if (strchr(name, '/') != NULL)
		snprintf(path, sizeof(path), "%s", name);
	else if (snprintf(path, sizeof(path), "/var/run/netns/%s", name) >=
	    (int)sizeof(path))
		errx(1, "netns name too long: %s", name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		err(1, "open %s", path);
	return fd;
}

/*
 * Creates a TUN in the current namespace, sets its MTU and queue length and
 * brings it up; addresses are the caller's (the testbed script's) business.
 */
static int
dev_open(const char *name, int mtu, int txqlen)
{
	struct ifreq	 ifr;
	int		 fd, s;

	if ((fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC)) == -1)
		err(1, "open /dev/net/tun");
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(fd, TUNSETIFF, &ifr) == -1)
		err(1, "TUNSETIFF %s", name);

	if ((s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		err(1, "socket");
	ifr.ifr_mtu = mtu;
	if (ioctl(s, SIOCSIFMTU, &ifr) == -1)
		err(1, "%s: set mtu %d", name, mtu);
	ifr.ifr_qlen = txqlen;
	if (ioctl(s, SIOCSIFTXQLEN, &ifr) == -1)
		err(1, "%s: set txqueuelen %d", name, txqlen);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) == -1)
		err(1, "%s: get flags", name);
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) == -1)
		err(1, "%s: up", name);
	close(s);
	return fd;
}

/*
 * The TUN fd stays bound to the namespace it was created in, so we enter
 * each end's namespace only for the open and come back.
 */
static int
dev_open_in(const char *netns, const char *name, int mtu, int txqlen)
{
	int	home, ns, fd;

	if (netns == NULL)
		return dev_open(name, mtu, txqlen);
	if ((home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) == -1)
		err(1, "open /proc/self/ns/net");
	ns = netns_open(netns);
	if (setns(ns, CLONE_NEWNET) == -1)
		err(1, "setns %s", netns);
	fd = dev_open(name, mtu, txqlen);
	if (setns(home, CLONE_NEWNET) == -1)
		err(1, "setns back");
	close(ns);
	close(home);
	return fd;
}

static bool
ring_full(const struct ring *r)
{
	return r->tail - r->head > r->mask;
}

static bool
ring_empty(const struct ring *r)
{
	return r->tail == r->head;
}

static struct pkt *
ring_at(const struct ring *r, uint32_t i)
{
	return &r->slot[i & r->mask];
}

/*
 * Commits the packet at the tail.  With reordering allowed it sinks towards
 * the head until the delivery times are ordered again; swapping whole slots
 * keeps every buffer owned by exactly one slot.
 */
static void
ring_push(struct ring *r)
{
	uint32_t	 i = r->tail++;
	struct pkt	 tmp;

	while (i != r->head && ring_at(r, i - 1)->due > ring_at(r, i)->due) {
		tmp = *ring_at(r, i - 1);
		*ring_at(r, i - 1) = *ring_at(r, i);
		*ring_at(r, i) = tmp;
		i--;
	}
}

static void
late_add(struct lateness *l, uint64_t ns)
{
	uint64_t	b = ns / LATE_STEP_NS;

	l->n++;
	l->sum_ns += ns;
	if (ns > l->max_ns)
		l->max_ns = ns;
	l->hist[b > LATE_BUCKETS ? LATE_BUCKETS : b]++;
}

/* Upper edge of the bucket holding the p-th quantile, in ns. */
static uint64_t
late_quantile(const struct lateness *l, double p)
{
	uint64_t	want, seen = 0;
	size_t		i;

	if (l->n == 0)
		return 0;
	want = (uint64_t)(p * (double)l->n);
	if ((double)want < p * (double)l->n)
		want++;
	for (i = 0; i <= LATE_BUCKETS; i++) {
		seen += l->hist[i];
		if (seen >= want)
			break;
	}
	if (i == LATE_BUCKETS + 1 || i == LATE_BUCKETS)
		return l->max_ns;
	return (i + 1) * LATE_STEP_NS;
}

static bool
loss_decide(struct linkem *le, struct dir *d)
{
	const struct conf	*cf = &le->cf;
	bool			 lost = false;

	if (cf->ge_on) {
		/* Move between the states first, then lose by the state's rate. */
		if (d->ge_bad) {
			if (rng_unit(d->rng) < cf->ge_pbg)
				d->ge_bad = false;
		} else if (rng_unit(d->rng) < cf->ge_pgb)
			d->ge_bad = true;
		if (rng_unit(d->rng) < (d->ge_bad ? cf->ge_lbad : cf->ge_lgood))
			lost = true;
	}
	if (cf->loss_pct > 0 && rng_unit(d->rng) * 100.0 < cf->loss_pct)
		lost = true;
	return lost;
}

/* Delivery time for a packet that leaves the bottleneck at 'sent'. */
static uint64_t
due_compute(struct linkem *le, struct dir *d, uint64_t sent)
{
	int64_t		delay = (int64_t)le->delay_ns;
	uint64_t	due;

	if (le->jitter_ns > 0) {
		delay += (int64_t)(rng_unit(d->rng) * 2.0 *
		    (double)le->jitter_ns) - (int64_t)le->jitter_ns;
		if (delay < 0)
			delay = 0;
	}
	due = sent + (uint64_t)delay;
	if (!le->cf.reorder && due < d->last_due)
		due = d->last_due;
	if (due > d->last_due)
		d->last_due = due;
	return due;
}

/*
 * Bottleneck admission.  The queue is virtual: link_free is when the serial
 * link finishes what it already holds, so the backlog in bytes is that time
 * at the link rate.  Returns false for a drop-tail drop, else sets *sent to
 * when the packet's last bit leaves the link.
 */
static bool
queue_admit(struct linkem *le, struct dir *d, uint64_t now, uint32_t len,
    uint64_t *sent)
{
	uint64_t	start, backlog;

	if (le->rate_bps == 0) {
		*sent = now;
		return true;
	}
	start = d->link_free > now ? d->link_free : now;
	backlog = (uint64_t)((double)(start - now) * (double)le->rate_bps /
	    8e9);
	if (backlog > 0 && backlog + len > le->qlimit)
		return false;
	if (backlog + len > d->c.qmax_bytes)
		d->c.qmax_bytes = backlog + len;
	d->link_free = start + ((uint64_t)len * 8 * NSEC + le->rate_bps / 2) /
	    le->rate_bps;
	*sent = d->link_free;
	return true;
}

static void
count_add(uint64_t *pkts, uint64_t *bytes, uint32_t len)
{
	(*pkts)++;
	*bytes += len;
}

/* Reads what the TUN has (up to a batch) and schedules it. */
static void
dir_ingest(struct linkem *le, struct dir *d)
{
	struct ring	*r = &d->ring;
	struct pkt	*p;
	uint64_t	 now, sent;
	uint8_t		*buf;
	ssize_t		 n;
	int		 i;

	for (i = 0; i < BATCH; i++) {
		p = NULL;
		if (ring_full(r))
			buf = le->scratch;
		else {
			p = ring_at(r, r->tail);
			if (p->data == NULL &&
			    (p->data = malloc((size_t)le->cf.mtu)) == NULL)
				err(1, "malloc");
			buf = p->data;
		}
		n = read(d->in_fd, buf, (size_t)le->cf.mtu);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				warn("%s: read", d->name);
			return;
		}
		now = mono_ns();
		count_add(&d->c.rx_pkts, &d->c.rx_bytes, (uint32_t)n);
		if (p == NULL) {
			count_add(&d->c.ring_pkts, &d->c.ring_bytes,
			    (uint32_t)n);
			continue;
		}
		if (!queue_admit(le, d, now, (uint32_t)n, &sent)) {
			count_add(&d->c.qdrop_pkts, &d->c.qdrop_bytes,
			    (uint32_t)n);
			continue;
		}
		if (loss_decide(le, d)) {
			count_add(&d->c.loss_pkts, &d->c.loss_bytes,
			    (uint32_t)n);
			continue;
		}
		p->len = (uint32_t)n;
		p->due = due_compute(le, d, sent);
		ring_push(r);
	}
}

/* Writes up to a batch of due packets; returns how many left the ring. */
static int
dir_deliver(struct dir *d)
{
	struct ring	*r = &d->ring;
	struct pkt	*p;
	uint64_t	 now;
	int		 i;

	for (i = 0; i < BATCH && !ring_empty(r); i++) {
		p = ring_at(r, r->head);
		now = mono_ns();
		if (p->due > now)
			break;
		/*
		 * A TUN write runs the receiving stack right here; it fails
		 * only when the far side is gone or broken, and a failed
		 * packet is as good as lost.
		 */
		if (write(d->out_fd, p->data, p->len) == (ssize_t)p->len)
			count_add(&d->c.fwd_pkts, &d->c.fwd_bytes, p->len);
		else
			count_add(&d->c.werr_pkts, &d->c.werr_bytes, p->len);
		late_add(&d->late, now - p->due);
		r->head++;
	}
	return i;
}

/* Loss realised on the packets that got past the queue. */
static double
dir_loss_pct(const struct counters *c)
{
	uint64_t	passed = c->rx_pkts - c->qdrop_pkts - c->ring_pkts;

	return passed ? 100.0 * (double)c->loss_pkts / (double)passed : 0.0;
}

static double
late_mean_us(const struct lateness *l)
{
	return l->n ? (double)l->sum_ns / (double)l->n / 1e3 : 0.0;
}

static void
dir_stats_text(const struct dir *d, double secs)
{
	const struct counters	*c = &d->c;
	const struct lateness	*l = &d->late;

	fprintf(stderr, "linkem: %s: rx %" PRIu64 " forwarded %" PRIu64
	    " pkts %" PRIu64 " B (%.2f Mbit/s); dropped: queue %" PRIu64
	    " loss %" PRIu64 " (%.3f%%) ring %" PRIu64 " write %" PRIu64
	    "; max queue %" PRIu64 " B; late us: mean %.1f p99 %.1f max %.1f\n",
	    d->name, c->rx_pkts, c->fwd_pkts, c->fwd_bytes,
	    secs > 0 ? (double)c->fwd_bytes * 8 / secs / 1e6 : 0.0,
	    c->qdrop_pkts, c->loss_pkts, dir_loss_pct(c), c->ring_pkts,
	    c->werr_pkts, c->qmax_bytes, late_mean_us(l),
	    (double)late_quantile(l, 0.99) / 1e3, (double)l->max_ns / 1e3);
}

static void
dir_stats_json(FILE *f, const struct dir *d)
{
	const struct counters	*c = &d->c;
	const struct lateness	*l = &d->late;

	fprintf(f, "{\"rx_pkts\": %" PRIu64 ", \"rx_bytes\": %" PRIu64
	    ", \"fwd_pkts\": %" PRIu64 ", \"fwd_bytes\": %" PRIu64
	    ", \"queue_drop_pkts\": %" PRIu64 ", \"queue_drop_bytes\": %" PRIu64
	    ", \"loss_pkts\": %" PRIu64 ", \"loss_bytes\": %" PRIu64
	    ", \"loss_pct\": %.4f"
	    ", \"ring_drop_pkts\": %" PRIu64 ", \"write_err_pkts\": %" PRIu64
	    ", \"queue_max_bytes\": %" PRIu64
	    ", \"late_n\": %" PRIu64 ", \"late_mean_us\": %.1f"
	    ", \"late_p50_us\": %.1f, \"late_p99_us\": %.1f"
	    ", \"late_max_us\": %.1f}",
	    c->rx_pkts, c->rx_bytes, c->fwd_pkts, c->fwd_bytes,
	    c->qdrop_pkts, c->qdrop_bytes, c->loss_pkts, c->loss_bytes,
	    dir_loss_pct(c), c->ring_pkts, c->werr_pkts, c->qmax_bytes, l->n,
	    late_mean_us(l), (double)late_quantile(l, 0.50) / 1e3,
	    (double)late_quantile(l, 0.99) / 1e3, (double)l->max_ns / 1e3);
}

/* Written to a temporary name and renamed, so readers never see half. */
static void
stats_write_json(struct linkem *le, double secs)
{
	const struct conf	*cf = &le->cf;
	char			 tmp[PATH_MAX];
	FILE			*f;

	if (cf->stats_path == NULL)
		return;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", cf->stats_path) >=
	    (int)sizeof(tmp)) {
		warnx("stats path too long");
		return;
	}
	if ((f = fopen(tmp, "w")) == NULL) {
		warn("%s", tmp);
		return;
	}
	fprintf(f, "{\"seconds\": %.3f, \"config\": {\"delay_ms\": %g, "
	    "\"jitter_ms\": %g, \"reorder\": %s, \"loss_pct\": %g, "
	    "\"ge\": %s, \"ge_pgb\": %g, \"ge_pbg\": %g, \"ge_loss_good\": %g, "
	    "\"ge_loss_bad\": %g, \"rate_mbit\": %g, \"queue_bytes\": %" PRIu64
	    ", \"seed\": %" PRIu64 ", \"mtu\": %d},\n \"a_to_b\": ",
	    secs, cf->delay_ms, cf->jitter_ms, cf->reorder ? "true" : "false",
	    cf->loss_pct, cf->ge_on ? "true" : "false", cf->ge_pgb * 100,
	    cf->ge_pbg * 100, cf->ge_lgood * 100, cf->ge_lbad * 100,
	    cf->rate_mbit, le->qlimit, cf->seed, cf->mtu);
	dir_stats_json(f, &le->d[0]);
	fprintf(f, ",\n \"b_to_a\": ");
	dir_stats_json(f, &le->d[1]);
	fprintf(f, "}\n");
	if (fclose(f) == EOF) {
		warn("%s", tmp);
		unlink(tmp);
		return;
	}
	if (rename(tmp, cf->stats_path) == -1)
		warn("rename %s", tmp);
}

static void
stats_report(struct linkem *le, bool reset)
{
	uint64_t	now = mono_ns();
	double		secs = (double)(now - le->since) / 1e9;
	int		i;

	for (i = 0; i < 2; i++)
		dir_stats_text(&le->d[i], secs);
	stats_write_json(le, secs);
	if (!reset)
		return;
	for (i = 0; i < 2; i++) {
		memset(&le->d[i].c, 0, sizeof(le->d[i].c));
		memset(&le->d[i].late, 0, sizeof(le->d[i].late));
	}
	le->since = now;
}

static void
epoll_add(int ep, int fd)
{
	struct epoll_event	ev;

	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.fd = fd;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == -1)
		err(1, "epoll_ctl");
}

/* Kernels before 5.11 lack epoll_pwait2(): an absolute timerfd instead. */
static void
timer_fallback(struct linkem *le)
{
	if ((le->tfd = timerfd_create(CLOCK_MONOTONIC,
	    TFD_CLOEXEC | TFD_NONBLOCK)) == -1)
		err(1, "timerfd_create");
	epoll_add(le->ep, le->tfd);
	le->armed = 0;
}

static void
linkem_setup(struct linkem *le)
{
	struct conf	*cf = &le->cf;
	sigset_t	 mask;
	int		 i;
	FILE		*f;

	le->rate_bps = (uint64_t)(cf->rate_mbit * 1e6);
	if (le->rate_bps > 0) {
		le->qlimit = cf->queue_bytes ? cf->queue_bytes :
		    (uint64_t)((double)le->rate_bps / 8 * cf->queue_ms / 1e3);
		/* Below one packet no back-to-back pair would get through. */
		if (le->qlimit < (uint64_t)cf->mtu)
			le->qlimit = (uint64_t)cf->mtu;
	}
	le->delay_ns = (uint64_t)(cf->delay_ms * 1e6);
	le->jitter_ns = (uint64_t)(cf->jitter_ms * 1e6);
	le->tfd = -1;
	if ((le->scratch = malloc((size_t)cf->mtu)) == NULL)
		err(1, "malloc");

	le->d[0].name = "a->b";
	le->d[1].name = "b->a";
	le->d[0].in_fd = le->d[1].out_fd = dev_open_in(cf->a_netns, cf->a_name,
	    cf->mtu, cf->txqlen);
	le->d[1].in_fd = le->d[0].out_fd = dev_open_in(cf->b_netns, cf->b_name,
	    cf->mtu, cf->txqlen);
	for (i = 0; i < 2; i++) {
		struct ring *r = &le->d[i].ring;

		if ((r->slot = calloc(cf->slots, sizeof(*r->slot))) == NULL)
			err(1, "calloc");
		r->mask = cf->slots - 1;
		/* Independent streams: one direction's traffic must not
		 * change the other's loss pattern. */
		rng_seed(le->d[i].rng, cf->seed * 2 + (uint64_t)i);
	}

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) == -1)
		err(1, "sigprocmask");
	if ((le->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) == -1)
		err(1, "signalfd");
	if ((le->ep = epoll_create1(EPOLL_CLOEXEC)) == -1)
		err(1, "epoll_create1");
	epoll_add(le->ep, le->d[0].in_fd);
	epoll_add(le->ep, le->d[1].in_fd);
	epoll_add(le->ep, le->sigfd);
	if (cf->timerfd)
		timer_fallback(le);

	/* The default 50 us timer slack would be most of our error budget. */
	if (prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL) == -1)
		warn("PR_SET_TIMERSLACK");
	if (cf->rtprio > 0) {
		struct sched_param sp = { .sched_priority = cf->rtprio };

		if (sched_setscheduler(0, SCHED_FIFO, &sp) == -1)
			warn("SCHED_FIFO");
	}
	if (cf->pidfile != NULL) {
		if ((f = fopen(cf->pidfile, "w")) == NULL)
			err(1, "%s", cf->pidfile);
		fprintf(f, "%ld\n", (long)getpid());
		if (fclose(f) == EOF)
			err(1, "%s", cf->pidfile);
	}
	fprintf(stderr, "linkem: %s <-> %s: delay %g ms jitter %g ms%s loss "
	    "%g%% rate %g Mbit/s queue %" PRIu64 " B seed %" PRIu64 " mtu %d\n",
	    cf->a_name, cf->b_name, cf->delay_ms, cf->jitter_ms,
	    cf->reorder ? " (reorder)" : "", cf->loss_pct, cf->rate_mbit,
	    le->qlimit, cf->seed, cf->mtu);
	le->since = mono_ns();
}

/* Earliest delivery across both rings; UINT64_MAX when both are empty. */
static uint64_t
next_due(const struct linkem *le)
{
	uint64_t	t = UINT64_MAX;
	int		i;

	for (i = 0; i < 2; i++) {
		const struct ring *r = &le->d[i].ring;

		if (!ring_empty(r) && ring_at(r, r->head)->due < t)
			t = ring_at(r, r->head)->due;
	}
	return t;
}

/*
 * Waits for input or the next due packet.  epoll_pwait2() takes the
 * timeout in nanoseconds; kernels before 5.11 lack it, and then an
 * absolute timerfd in the same epoll set does the job.
 */
static int
linkem_wait(struct linkem *le, struct epoll_event *ev, int nev)
{
	struct itimerspec	its;
	struct timespec		ts;
	uint64_t		due = next_due(le), now, left;
	int			n;

	if (le->tfd == -1) {
		if (due == UINT64_MAX)
			n = epoll_pwait2(le->ep, ev, nev, NULL, NULL);
		else {
			now = mono_ns();
			left = due > now ? due - now : 0;
			ts.tv_sec = (time_t)(left / NSEC);
			ts.tv_nsec = (long)(left % NSEC);
			n = epoll_pwait2(le->ep, ev, nev, &ts, NULL);
		}
		if (n != -1 || errno != ENOSYS)
			return n;
		timer_fallback(le);
	}
	if (due != le->armed) {
		memset(&its, 0, sizeof(its));
		if (due != UINT64_MAX) {
			/* it_value zero would disarm: never ask for time 0. */
			its.it_value.tv_sec = (time_t)(due / NSEC);
			its.it_value.tv_nsec = (long)(due % NSEC);
			if (due == 0)
				its.it_value.tv_nsec = 1;
		}
		if (timerfd_settime(le->tfd, TFD_TIMER_ABSTIME, &its, NULL) == -1)
			err(1, "timerfd_settime");
		le->armed = due;
	}
	return epoll_wait(le->ep, ev, nev, -1);
}

/*
 * SIGHUP: the settings in --ctl FILE ("--loss PCT", "--ge A,B,C,D" or
 * "--ge off", "--seed N", "--delay MS", whitespace-separated) replace the
 * current ones (a new delay applies to packets that arrive from then on),
 * and both directions restart their loss streams from the (new) seed, as
 * a fresh linkem would: a run can change the loss pattern without tearing
 * down the TUNs and every connection across them.  Packets already queued
 * keep their fate.  A bad file changes nothing.
 */
static void
linkem_reload(struct linkem *le)
{
	struct conf	 nc = le->cf;
	char		 buf[512], *tok, *arg, *save = NULL;
	FILE		*f;
	size_t		 n;
	double		 v = 0;
	bool		 ok = true;
	int		 i;

	if (le->cf.ctl_path == NULL) {
		warnx("SIGHUP without --ctl: nothing to reload");
		return;
	}
	if ((f = fopen(le->cf.ctl_path, "r")) == NULL) {
		warn("%s", le->cf.ctl_path);
		return;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	if (n == sizeof(buf) - 1) {
		warnx("%s: too long, ignored", le->cf.ctl_path);
		return;
	}
	buf[n] = '\0';
	for (tok = strtok_r(buf, " \t\n", &save); tok != NULL;
	    tok = strtok_r(NULL, " \t\n", &save)) {
		if ((arg = strtok_r(NULL, " \t\n", &save)) == NULL) {
			warnx("%s: %s wants a value, ignored", le->cf.ctl_path,
			    tok);
			return;
		}
		if (strcmp(tok, "--loss") == 0)
			ok = num_ok(arg, 0, 100, &nc.loss_pct);
		else if (strcmp(tok, "--delay") == 0)
			ok = num_ok(arg, 0, 10000, &nc.delay_ms);
		else if (strcmp(tok, "--seed") == 0) {
			ok = num_ok(arg, 0, 9007199254740992.0, &v);
			nc.seed = (uint64_t)v;
		} else if (strcmp(tok, "--ge") == 0 && strcmp(arg, "off") == 0)
			nc.ge_on = false;
		else if (strcmp(tok, "--ge") == 0)
			ok = ge_parse(&nc, arg);
		else {
			warnx("%s: unknown option %s, ignored", le->cf.ctl_path,
			    tok);
			return;
		}
		if (!ok) {
			warnx("%s: bad value for %s: \"%s\", ignored",
			    le->cf.ctl_path, tok, arg);
			return;
		}
	}
	le->cf = nc;
	le->delay_ns = (uint64_t)(nc.delay_ms * 1e6);
	for (i = 0; i < 2; i++) {
		rng_seed(le->d[i].rng, nc.seed * 2 + (uint64_t)i);
		le->d[i].ge_bad = false;
	}
	fprintf(stderr, "linkem: reloaded: loss %g%%%s seed %" PRIu64
	    " delay %g ms\n", nc.loss_pct, nc.ge_on ? " + Gilbert-Elliott" : "",
	    nc.seed, nc.delay_ms);
}

/* Returns false when asked to exit. */
static bool
linkem_signal(struct linkem *le)
{
	struct signalfd_siginfo	si;

	while (read(le->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGUSR1)
			stats_report(le, true);
		else if (si.ssi_signo == SIGHUP)
			linkem_reload(le);
		else
			return false;
	}
	return true;
}

static void
linkem_run(struct linkem *le)
{
	struct epoll_event	ev[4];
	uint64_t		junk;
	int			i, n, moved;

	for (;;) {
		/* Alternate so a busy direction cannot starve the other. */
		do {
			moved = dir_deliver(&le->d[0]);
			moved += dir_deliver(&le->d[1]);
		} while (moved > 0);

		if ((n = linkem_wait(le, ev, 4)) == -1) {
			if (errno == EINTR)
				continue;
			err(1, "epoll wait");
		}
		for (i = 0; i < n; i++) {
			int fd = ev[i].data.fd;

			if (fd == le->d[0].in_fd)
				dir_ingest(le, &le->d[0]);
			else if (fd == le->d[1].in_fd)
				dir_ingest(le, &le->d[1]);
			else if (fd == le->tfd) {
				if (read(le->tfd, &junk, sizeof(junk)) == -1 &&
				    errno != EAGAIN)
					err(1, "timerfd read");
				le->armed = 0;
			} else if (fd == le->sigfd && !linkem_signal(le))
				return;
		}
	}
}

int
main(int argc, char *argv[])
{
	static struct linkem	le;	/* big histograms: keep off the stack */

	conf_parse(&le.cf, argc, argv);
	linkem_setup(&le);
	linkem_run(&le);
	stats_report(&le, false);
	if (le.cf.pidfile != NULL)
		unlink(le.cf.pidfile);
	return 0;
}
