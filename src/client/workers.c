/*
 * The client's worker processes (see workers.h).
 *
 * A message is one SOCK_SEQPACKET record: a struct wmsg, then its
 * payload (a name, a DNS reply, "group\0member\0", a chunk of a
 * status snapshot, or health news).  Records keep their bounds, so
 * nothing is parsed across two of them; a record of the wrong size is
 * dropped.
 */
#include "config.h"

#include "client/workers.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "core/log.h"
#include "core/loop.h"

enum {
	W_FAKE = 1,	/* slot, name */
	W_LEARN,	/* a DNS reply */
	W_SELECT,	/* group, member */
	W_RELOAD,
	W_DRAIN,
	W_STOP,
	W_STATUS,	/* seq, flags: a snapshot, please */
	W_STATUS_PART,	/* seq, total, a chunk of it (total 0: none) */
	W_PTB6,		/* slot: the MTU; an ICMPv6 Packet Too Big's quote */
	W_HEALTH,	/* slot: the worker it comes from; its news */
};

#define W_FLOWS		0x01	/* W_STATUS: with the flow list */
#define W_PAYLOAD_MAX	65536
#define W_STATUS_MAX	(64u << 20)	/* a snapshot larger is refused */
#define W_DROP_LOG_MS	10000
#define W_PTB6_QUOTE	40	/* what tsnetif_ptb6 reads of a quote */
#define W_PTB6_PENDING	16	/* more at once: the oldest is dropped */

struct wmsg {
	uint8_t		 type;
	uint8_t		 flags;
	uint16_t	 pad;
	uint32_t	 seq;
	uint32_t	 total;		/* W_STATUS_PART */
	uint32_t	 slot;		/* W_FAKE, W_PTB6, W_HEALTH */
};

struct peer {
	struct workers	*w;
	unsigned	 idx;
	int		 fd;		/* -1: none (ended) */
	pid_t		 pid;		/* worker 0's children */
	struct loop_fd	 lfd;
};

struct workers {
	unsigned	 self, n;
	/* Worker 0: peer[i] is worker i (peer[0] unused); the others:
	 * peer[0] is worker 0. */
	struct peer	 peer[WORKERS_MAX];
	struct loop	*loop;
	struct workers_ops ops;
	uint32_t	 seq;
	uint64_t	 dropped;
	struct timespec	 drop_logged;
	/* Work left for a loop event (workers.h: "later"). */
	struct loop_timer later;
	bool		 want_reload, want_drain, want_stop, want_status;
	bool		 status_flows;
	uint32_t	 status_seq;
	/* Packet Too Big news, applied from a loop event (lwIP's pcbs
	 * change under it): a ring, bounded. */
	struct {
		uint8_t	 quote[W_PTB6_QUOTE];
		unsigned mtu;
	}		 ptb[W_PTB6_PENDING];
	unsigned	 nptb, ptb_head;
	uint8_t		 buf[sizeof(struct wmsg) + W_PAYLOAD_MAX];
};

static uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Waits up to ms for fd to be ready for ev: true if it is. */
static bool
fd_wait(int fd, short ev, int ms)
{
	struct pollfd	pfd = { .fd = fd, .events = ev };
	int		rc;

	do
		rc = poll(&pfd, 1, ms);
	while (rc == -1 && errno == EINTR);
	return rc == 1 && (pfd.revents & (ev | POLLHUP | POLLERR)) != 0;
}

/* One record to fd, waiting up to wait_ms for room.  0 or -1. */
static int
msg_send(int fd, const struct wmsg *h, const void *data, size_t len,
    int wait_ms)
{
	struct iovec	iov[2] = {
		{ .iov_base = (void *)(uintptr_t)h, .iov_len = sizeof(*h) },
		{ .iov_base = (void *)(uintptr_t)data, .iov_len = len },
	};
	struct msghdr	mh = { .msg_iov = iov, .msg_iovlen = len > 0 ? 2 : 1 };
	bool		waited = false;

	if (fd < 0 || len > W_PAYLOAD_MAX)
		return -1;
	for (;;) {
		if (sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN || waited || !fd_wait(fd, POLLOUT, wait_ms))
			return -1;
		waited = true;
	}
}

/* ---- start ------------------------------------------------------------ */

static void
close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* In the new worker i: only its own queue and socket stay open. */
static void
workers_become(struct workers *w, unsigned i, int *fds, int *child_end,
    pid_t parent)
{
	unsigned j;

	if (prctl(PR_SET_PDEATHSIG, SIGTERM) == -1 || getppid() != parent)
		_exit(1);	/* the main process is gone already */
	for (j = 0; j < w->n; j++) {
		if (j != i) {
			close_fd(&fds[j]);
			close_fd(&child_end[j]);
		}
		close_fd(&w->peer[j].fd);
		w->peer[j].pid = 0;
	}
	w->self = i;
	w->peer[0].fd = child_end[i];
	child_end[i] = -1;
}

int
workers_fork(struct workers **wp, int *fds, unsigned n)
{
	struct workers	*w;
	int		 child_end[WORKERS_MAX], sv[2];
	unsigned	 i, j;
	pid_t		 pid, self = getpid();
	char		 tag[16];

	if (n < 2 || n > WORKERS_MAX || (w = calloc(1, sizeof(*w))) == NULL) {
		log_warnx("workers: cannot start %u", n);
		return -1;
	}
	w->n = n;
	for (i = 0; i < n; i++) {
		w->peer[i].w = w;
		w->peer[i].idx = i;
		w->peer[i].fd = child_end[i] = -1;
	}
	for (i = 1; i < n; i++) {
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
		    sv) == -1) {
			log_warn("workers: socketpair");
			goto fail;
		}
		w->peer[i].fd = sv[0];
		child_end[i] = sv[1];
	}
	fflush(NULL);
	for (i = 1; i < n; i++) {
		if ((pid = fork()) == -1) {
			log_warn("workers: fork");
			goto fail;
		}
		if (pid == 0) {
			workers_become(w, i, fds, child_end, self);
			snprintf(tag, sizeof(tag), "worker %u", i);
			log_set_tag(tag);
			*wp = w;
			return (int)i;
		}
		w->peer[i].pid = pid;
	}
	/* Worker 0 keeps every queue's fd, unread: a queue whose last fd
	 * closes is detached and the last one takes its index, which would
	 * move the flows of a worker still draining to another. */
	for (i = 1; i < n; i++)
		close_fd(&child_end[i]);
	*wp = w;
	return 0;
fail:
	/* The ones forked see their socket end, and end. */
	for (j = 1; j < n; j++) {
		close_fd(&child_end[j]);
		close_fd(&w->peer[j].fd);
		if (w->peer[j].pid > 0)
			(void)waitpid(w->peer[j].pid, NULL, 0);
	}
	free(w);
	return -1;
}

/* ---- worker 0 --------------------------------------------------------- */

static void
workers_drop(struct workers *w, unsigned i)
{
	struct timespec	now;

	w->dropped++;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (w->drop_logged.tv_sec != 0 &&
	    now.tv_sec - w->drop_logged.tv_sec < W_DROP_LOG_MS / 1000)
		return;
	w->drop_logged = now;
	log_warnx("workers: worker %u does not read; a message to it was "
	    "dropped (%llu so far)", i, (unsigned long long)w->dropped);
}

/* Worker 0: h and data to every other worker but skip (0: none), each
 * waited for at most wait_ms, else dropped and counted. */
static void
workers_bcast_but(struct workers *w, const struct wmsg *h, const void *data,
    size_t len, unsigned skip, unsigned wait_ms)
{
	unsigned i;

	if (w == NULL || w->self != 0)
		return;
	for (i = 1; i < w->n; i++)
		if (i != skip && w->peer[i].fd >= 0 && msg_send(w->peer[i].fd,
		    h, data, len, wait_ms) == -1)
			workers_drop(w, i);
}

static void
workers_bcast(struct workers *w, const struct wmsg *h, const void *data,
    size_t len)
{
	workers_bcast_but(w, h, data, len, 0, WORKERS_SEND_MS);
}

void
workers_send_fake(struct workers *w, uint32_t slot, const char *name)
{
	struct wmsg h = { .type = W_FAKE, .slot = slot };

	workers_bcast(w, &h, name, strlen(name) + 1);
}

void
workers_send_learn(struct workers *w, const uint8_t *msg, size_t len)
{
	struct wmsg h = { .type = W_LEARN };

	workers_bcast(w, &h, msg, len);
}

void
workers_send_select(struct workers *w, const char *group, const char *member)
{
	struct wmsg	h = { .type = W_SELECT };
	char		buf[256];
	size_t		gl = strlen(group) + 1, ml = strlen(member) + 1;

	if (gl + ml > sizeof(buf))
		return;
	memcpy(buf, group, gl);
	memcpy(buf + gl, member, ml);
	workers_bcast(w, &h, buf, gl + ml);
}

void
workers_send_ptb6(struct workers *w, const uint8_t *quote, size_t qlen,
    unsigned mtu)
{
	struct wmsg h = { .type = W_PTB6, .slot = mtu };

	if (qlen >= W_PTB6_QUOTE)
		workers_bcast(w, &h, quote, W_PTB6_QUOTE);
}

static void
workers_send_type(struct workers *w, uint8_t type)
{
	struct wmsg h = { .type = type };

	workers_bcast(w, &h, NULL, 0);
}

void
workers_send_reload(struct workers *w)
{
	workers_send_type(w, W_RELOAD);
}

void
workers_send_drain(struct workers *w)
{
	workers_send_type(w, W_DRAIN);
}

void
workers_send_stop(struct workers *w)
{
	workers_send_type(w, W_STOP);
}

/*
 * Health news (workers.h): from worker 0 to every other; from another
 * to worker 0, which takes it in and passes it on to the rest.  Never
 * waited for: evidence a full socket cannot take is dropped (counted),
 * and the loop goes on.
 */
void
workers_send_health(struct workers *w, const void *news, size_t len)
{
	struct wmsg	h = { .type = W_HEALTH };

	if (w == NULL)
		return;
	h.slot = w->self;
	if (w->self != 0) {
		if (msg_send(w->peer[0].fd, &h, news, len, 0) == -1)
			workers_drop(w, 0);
		return;
	}
	workers_bcast_but(w, &h, news, len, 0, 0);
}

/* Worker 0: a record from worker i that is no status part. */
static void
workers_from_child(struct workers *w, unsigned i, const uint8_t *rec,
    size_t len)
{
	struct wmsg	h;

	memcpy(&h, rec, sizeof(h));
	if (h.type != W_HEALTH || len == sizeof(h))
		return;
	h.slot = i;		/* where it came from, whatever it says */
	if (w->ops.health != NULL)
		w->ops.health(w->ops.arg, i, rec + sizeof(h), len - sizeof(h));
	workers_bcast_but(w, &h, rec + sizeof(h), len - sizeof(h), i, 0);
}

/* Worker i's socket ended: it has exited, or is about to. */
static void
workers_reap(struct workers *w, unsigned i)
{
	struct peer	*p = &w->peer[i];
	int		 st = -1, k;
	pid_t		 r = 0;

	loop_fd_del(w->loop, &p->lfd);
	close_fd(&p->fd);
	for (k = 0; k < 100 && p->pid > 0; k++) {
		if ((r = waitpid(p->pid, &st, WNOHANG)) != 0)
			break;
		(void)poll(NULL, 0, 10);
	}
	if (r <= 0)
		st = -1;	/* reaped at the end */
	else
		p->pid = 0;
	if (w->ops.ended != NULL)
		w->ops.ended(w->ops.arg, i, st);
}

/* Worker 0 reads a child's socket for its health news and its end (and
 * drops stale parts of a snapshot no longer waited for). */
static void
workers_on_child(struct loop_fd *lfd, uint32_t revents)
{
	struct peer	*p = container_of(lfd, struct peer, lfd);
	struct workers	*w = p->w;
	ssize_t		 r;

	(void)revents;
	for (;;) {
		r = recv(p->fd, w->buf, sizeof(w->buf), MSG_DONTWAIT);
		if (r >= (ssize_t)sizeof(struct wmsg))
			workers_from_child(w, p->idx, w->buf, (size_t)r);
		if (r > 0)
			continue;
		if (r == -1 && errno == EINTR)
			continue;
		if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			workers_reap(w, p->idx);
		return;
	}
}

int
workers_ask_status(struct workers *w, unsigned i, bool flows, uint8_t **buf,
    size_t *len)
{
	struct peer	*p;
	struct wmsg	 h = { .type = W_STATUS }, *rh;
	uint64_t	 until = mono_ms() + WORKERS_ASK_MS, now;
	uint8_t		*out = NULL;
	size_t		 got = 0, total = 0, n;
	ssize_t		 r;

	if (w == NULL || w->self != 0 || i == 0 || i >= w->n)
		return -1;
	p = &w->peer[i];
	h.seq = ++w->seq;
	h.flags = flows ? W_FLOWS : 0;
	if (msg_send(p->fd, &h, NULL, 0, WORKERS_SEND_MS) == -1)
		return -1;
	while ((now = mono_ms()) < until) {
		if (!fd_wait(p->fd, POLLIN, (int)(until - now)))
			break;
		r = recv(p->fd, w->buf, sizeof(w->buf), MSG_DONTWAIT);
		if (r == -1 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < (ssize_t)sizeof(*rh))
			break;		/* ended (the loop reaps it) */
		rh = (struct wmsg *)w->buf;
		if (rh->type == W_HEALTH) {	/* the news goes on */
			workers_from_child(w, i, w->buf, (size_t)r);
			continue;
		}
		if (rh->type != W_STATUS_PART || rh->seq != h.seq)
			continue;	/* an old answer */
		n = (size_t)r - sizeof(*rh);
		if (out == NULL) {
			total = rh->total;
			if (total == 0 || total > W_STATUS_MAX ||
			    (out = malloc(total)) == NULL)
				break;
		}
		if (rh->total != total || n > total - got)
			break;
		memcpy(out + got, w->buf + sizeof(*rh), n);
		if ((got += n) == total) {
			*buf = out;
			*len = total;
			return 0;
		}
	}
	free(out);
	return -1;
}

/* ---- workers 1..N-1 --------------------------------------------------- */

static void
workers_later(struct workers *w)
{
	if (!loop_timer_armed(&w->later))
		loop_timer_set(w->loop, &w->later, 0);
}

/* Worker 0 asked for a snapshot: sent in parts, each waited for. */
static void
workers_answer_status(struct workers *w)
{
	struct wmsg	 h = { .type = W_STATUS_PART, .seq = w->status_seq };
	uint8_t		*snap = NULL;
	size_t		 len = 0, off = 0, n;

	if (w->ops.status == NULL ||
	    w->ops.status(w->ops.arg, w->status_flows, &snap, &len) == -1 ||
	    len == 0 || len > W_STATUS_MAX) {
		h.total = 0;
		(void)msg_send(w->peer[0].fd, &h, NULL, 0, WORKERS_ASK_MS);
		free(snap);
		return;
	}
	h.total = (uint32_t)len;
	while (off < len) {
		n = len - off < W_PAYLOAD_MAX ? len - off : W_PAYLOAD_MAX;
		if (msg_send(w->peer[0].fd, &h, snap + off, n,
		    WORKERS_ASK_MS) == -1)
			break;
		off += n;
	}
	free(snap);
}

static void
workers_on_later(struct loop_timer *t)
{
	struct workers *w = container_of(t, struct workers, later);

	while (w->nptb > 0) {
		w->nptb--;
		if (w->ops.ptb6 != NULL)
			w->ops.ptb6(w->ops.arg, w->ptb[w->ptb_head].quote,
			    W_PTB6_QUOTE, w->ptb[w->ptb_head].mtu);
		w->ptb_head = (w->ptb_head + 1) % W_PTB6_PENDING;
	}
	if (w->want_reload && w->ops.reload != NULL) {
		w->want_reload = false;
		w->ops.reload(w->ops.arg);
	}
	if (w->want_status) {
		w->want_status = false;
		workers_answer_status(w);
	}
	if (w->want_drain && w->ops.drain != NULL) {
		w->want_drain = false;
		w->ops.drain(w->ops.arg);
	}
	if (w->want_stop && w->ops.stop != NULL) {
		w->want_stop = false;
		w->ops.stop(w->ops.arg);
	}
}

/* One record from worker 0. */
static void
workers_take(struct workers *w, const uint8_t *rec, size_t len)
{
	const struct wmsg *h = (const struct wmsg *)rec;
	const char	*a = (const char *)rec + sizeof(*h), *b;
	size_t		 n = len - sizeof(*h);
	unsigned	 i;

	switch (h->type) {
	case W_FAKE:
		if (n > 1 && a[n - 1] == '\0' && w->ops.fake != NULL)
			w->ops.fake(w->ops.arg, h->slot, a);
		break;
	case W_LEARN:
		if (n > 0 && w->ops.learn != NULL)
			w->ops.learn(w->ops.arg, rec + sizeof(*h), n);
		break;
	case W_SELECT:
		if (n < 4 || a[n - 1] != '\0' || w->ops.select == NULL ||
		    (b = memchr(a, '\0', n)) == NULL || b + 1 >= a + n)
			break;
		w->ops.select(w->ops.arg, a, b + 1);
		break;
	case W_HEALTH:
		if (n > 0 && w->ops.health != NULL)
			w->ops.health(w->ops.arg, h->slot, rec + sizeof(*h), n);
		break;
	case W_PTB6:
		if (n != W_PTB6_QUOTE)
			break;
		if (w->nptb == W_PTB6_PENDING) {	/* the oldest goes */
			w->ptb_head = (w->ptb_head + 1) % W_PTB6_PENDING;
			w->nptb--;
		}
		i = (w->ptb_head + w->nptb++) % W_PTB6_PENDING;
		memcpy(w->ptb[i].quote, a, W_PTB6_QUOTE);
		w->ptb[i].mtu = h->slot;
		workers_later(w);
		break;
	case W_RELOAD:
		w->want_reload = true;
		workers_later(w);
		break;
	case W_DRAIN:
		w->want_drain = true;
		workers_later(w);
		break;
	case W_STOP:
		w->want_stop = true;
		workers_later(w);
		break;
	case W_STATUS:
		w->want_status = true;
		w->status_flows = (h->flags & W_FLOWS) != 0;
		w->status_seq = h->seq;
		workers_later(w);
		break;
	default:
		break;		/* unknown: a newer binary cannot be */
	}
}

bool
workers_poll(struct workers *w)
{
	bool	taken = false;
	ssize_t	r;

	if (w == NULL || w->self == 0 || w->peer[0].fd < 0)
		return false;
	for (;;) {
		r = recv(w->peer[0].fd, w->buf, sizeof(w->buf), MSG_DONTWAIT);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return taken;
		if (r <= 0) {
			/* The main process is gone: drain, and end. */
			log_warnx("workers: the main process ended; draining");
			loop_fd_del(w->loop, &w->peer[0].lfd);
			close_fd(&w->peer[0].fd);
			w->want_drain = true;
			workers_later(w);
			return taken;
		}
		if ((size_t)r < sizeof(struct wmsg))
			continue;
		workers_take(w, w->buf, (size_t)r);
		taken = true;
	}
}

void
workers_poll_news(struct workers *w)
{
	struct wmsg	h;
	unsigned	i;
	ssize_t		r;

	if (w == NULL)
		return;
	if (w->self != 0) {
		/* Only as far as the first record that is no news: the rest
		 * (a fake-IP slot taken over, say) may change what the
		 * caller holds, and keeps its order. */
		while (w->peer[0].fd >= 0) {
			r = recv(w->peer[0].fd, &h, sizeof(h),
			    MSG_PEEK | MSG_DONTWAIT);
			if (r == -1 && errno == EINTR)
				continue;
			if (r != (ssize_t)sizeof(h) || h.type != W_HEALTH ||
			    (r = recv(w->peer[0].fd, w->buf, sizeof(w->buf),
			    MSG_DONTWAIT)) < (ssize_t)sizeof(h))
				return;
			workers_take(w, w->buf, (size_t)r);
		}
		return;
	}
	for (i = 1; i < w->n; i++) {
		while (w->peer[i].fd >= 0) {
			r = recv(w->peer[i].fd, w->buf, sizeof(w->buf),
			    MSG_DONTWAIT);
			if (r == -1 && errno == EINTR)
				continue;
			if (r <= 0)
				break;		/* none, or its end: the loop's */
			if (r >= (ssize_t)sizeof(struct wmsg))
				workers_from_child(w, i, w->buf, (size_t)r);
		}
	}
}

static void
workers_on_parent(struct loop_fd *lfd, uint32_t revents)
{
	struct peer *p = container_of(lfd, struct peer, lfd);

	(void)revents;
	(void)workers_poll(p->w);
}

/* ---- both ------------------------------------------------------------- */

int
workers_start(struct workers *w, struct loop *l, const struct workers_ops *ops)
{
	unsigned i;

	w->loop = l;
	w->ops = *ops;
	loop_timer_init(&w->later, workers_on_later);
	if (w->self != 0)
		return loop_fd_add(l, &w->peer[0].lfd, w->peer[0].fd, EPOLLIN,
		    workers_on_parent);
	for (i = 1; i < w->n; i++)
		if (w->peer[i].fd >= 0 && loop_fd_add(l, &w->peer[i].lfd,
		    w->peer[i].fd, EPOLLIN, workers_on_child) == -1)
			return -1;
	return 0;
}

unsigned
workers_self(const struct workers *w)
{
	return w != NULL ? w->self : 0;
}

unsigned
workers_count(const struct workers *w)
{
	return w != NULL ? w->n : 1;
}

unsigned
workers_led(const struct workers *w)
{
	return w != NULL && w->self != 0 && w->peer[0].fd >= 0;
}

uint64_t
workers_dropped(const struct workers *w)
{
	return w != NULL ? w->dropped : 0;
}

void
workers_end(struct workers *w, unsigned wait_ms)
{
	uint64_t	until;
	unsigned	i;
	pid_t		r;

	if (w == NULL)
		return;
	if (w->loop != NULL)
		loop_timer_cancel(w->loop, &w->later);
	if (w->self != 0) {
		if (w->loop != NULL)
			loop_fd_del(w->loop, &w->peer[0].lfd);
		close_fd(&w->peer[0].fd);
		free(w);
		return;
	}
	workers_send_stop(w);
	until = mono_ms() + wait_ms;
	for (i = 1; i < w->n; i++) {
		if (w->loop != NULL)
			loop_fd_del(w->loop, &w->peer[i].lfd);
		close_fd(&w->peer[i].fd);
		while (w->peer[i].pid > 0) {
			if ((r = waitpid(w->peer[i].pid, NULL, WNOHANG)) != 0)
				break;
			if (mono_ms() >= until) {
				log_warnx("workers: worker %u did not end; "
				    "killed", i);
				(void)kill(w->peer[i].pid, SIGKILL);
				(void)waitpid(w->peer[i].pid, NULL, 0);
				break;
			}
			(void)poll(NULL, 0, 10);
		}
	}
	free(w);
}
