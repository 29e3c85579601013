/*
 * Bidirectional relay between an outer stream and a plain socket.
 *
 * relay_run() loops "flush, then fill" over both directions until a pass
 * makes no progress.  Looping rather than doing one pass matters for the
 * outer side: bytes TLS has already decrypted (outer_pending) produce no
 * epoll event, so they must be taken whenever the buffer has room, not
 * only when the fd becomes readable.
 */
#include "config.h"

#include "server/relay.h"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "server/httpframe.h"
#include "tls/outer.h"

_Static_assert(BUF_HEADROOM >= OUTER_HEADROOM,
    "a relay buffer has the outer's headroom");

static bool
relay_again(int err)
{
	return err == EAGAIN || err == EWOULDBLOCK;
}

/*
 * What a blocked outer operation waits for.  outer_events() is the union
 * over the outer's blocked operations; relay_run() retries every operation
 * the relay still wants on each pass, so the value recorded at the last
 * block is current, and it is used only while the relay wants that
 * operation (see relay_outer_events).
 */
static uint32_t
relay_blocked_on(const struct relay *r, uint32_t natural)
{
	uint32_t	 ev = outer_events(r->outer);

	return ev != 0 ? ev : natural;
}

void
relay_init(struct relay *r, size_t bufsz)
{
	*r = (struct relay){ .fd = -1 };
	buf_init(&r->to_fd, bufsz);
	buf_init(&r->to_outer, bufsz);
}

void
relay_start(struct relay *r, struct outer *o, int fd)
{
	r->outer = o;
	r->fd = fd;
	r->outer_rd_ev = EPOLLIN;
	r->outer_wr_ev = EPOLLOUT;
	if (fd == -1) {
		/* Nothing will ever be read from or written to the fd side. */
		r->fd_eof = true;
		r->fd_shut = true;
	}
}

void
relay_hold_outer(struct relay *r)
{
	r->hold_outer = true;
}

void
relay_release_outer(struct relay *r)
{
	r->hold_outer = false;
}

bool
relay_outer_held(const struct relay *r)
{
	return r->hold_outer;
}

int
relay_frame_http(struct relay *r)
{
	if (r->frame == NULL && (r->frame = httpframe_new()) == NULL)
		return -1;
	return 0;
}

void
relay_free(struct relay *r)
{
	buf_free(&r->to_fd);
	buf_free(&r->to_outer);
	httpframe_free(r->frame);
	r->frame = NULL;
}

void
relay_set_budget(struct relay *r, struct limit_mem *m)
{
	buf_set_budget(&r->to_fd, m);
	buf_set_budget(&r->to_outer, m);
}

/* Only sides still read count: a finished side needs no memory. */
bool
relay_starved(const struct relay *r)
{
	return (r->to_fd.denied && !r->outer_eof) ||
	    (r->to_outer.denied && !r->fd_eof);
}

/* Outer -> fd.  Then, if the outer side has ended, shut the fd's write. */
static int
relay_flush_fd(struct relay *r, bool *progress)
{
	ssize_t	 n;

	while (buf_len(&r->to_fd) > 0) {
		if (r->fd == -1) {
			buf_consume(&r->to_fd, buf_len(&r->to_fd));
			*progress = true;
			break;
		}
		n = send(r->fd, buf_head(&r->to_fd), buf_len(&r->to_fd),
		    MSG_NOSIGNAL);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (relay_again(errno))
				return 0;
			r->err = errno;
			return -1;
		}
		if (r->frame != NULL)
			httpframe_requests(r->frame, buf_head(&r->to_fd),
			    (size_t)n);
		buf_consume(&r->to_fd, (size_t)n);
		r->bytes_to_fd += (uint64_t)n;
		*progress = true;
	}
	buf_release_if_empty(&r->to_fd);
	if (r->outer_eof && !r->fd_shut) {
		if (shutdown(r->fd, SHUT_WR) == -1) {
			r->err = errno;
			return -1;
		}
		r->fd_shut = true;
		*progress = true;
	}
	return 0;
}

/* fd -> outer.  Then, if the fd side has ended, shut the outer's write. */
static int
relay_flush_outer(struct relay *r, bool *progress)
{
	ssize_t	 n;
	size_t	 len;

	if (r->hold_outer)
		return 0;
	r->frame_held = false;
	while ((len = buf_len(&r->to_outer)) > 0) {
		if (r->frame != NULL && (len = httpframe_record(r->frame,
		    buf_head(&r->to_outer), len, r->fd_eof)) == 0) {
			r->frame_held = true;	/* more bytes release it */
			return 0;
		}
		/* The fd side's last bytes: the end marker with them.  In
		 * place: a framed flow's chunks are encrypted from the buffer
		 * (with their lengths in its headroom), not from a copy. */
		n = outer_write_inplace(r->outer, buf_head_mut(&r->to_outer),
		    len, r->fd_eof && !r->quiet &&
		    len == buf_len(&r->to_outer));
		if (n == -1) {
			if (relay_again(errno)) {
				r->outer_wr_ev = relay_blocked_on(r, EPOLLOUT);
				return 0;
			}
			r->err = errno;
			return -1;
		}
		if (r->frame != NULL)
			httpframe_sent(r->frame, (size_t)n);
		buf_consume(&r->to_outer, (size_t)n);
		r->bytes_to_outer += (uint64_t)n;
		*progress = true;
	}
	buf_release_if_empty(&r->to_outer);
	if (r->fd_eof && !r->outer_shut && r->quiet &&
	    (r->bytes_to_outer == 0 || r->outer_eof || (r->frame != NULL &&
	    httpframe_request_open(r->frame)))) {
		r->outer_shut = r->outer_eof = r->fd_shut = true;
		*progress = true;
		return 0;
	}
	if (r->fd_eof && !r->outer_shut) {
		if (outer_shutdown_write(r->outer) == -1) {
			if (relay_again(errno)) {
				r->outer_wr_ev = relay_blocked_on(r, EPOLLOUT);
				return 0;
			}
			r->err = errno;
			return -1;
		}
		r->outer_shut = true;
		*progress = true;
	}
	return 0;
}

static int
relay_fill_from_outer(struct relay *r, bool *progress)
{
	uint8_t	*tail;
	size_t	 room;
	ssize_t	 n;

	/* Nothing came since the last read blocked (outer_pending: bytes
	 * TLS holds, which no event announces). */
	if (r->outer_rd_idle && outer_pending(r->outer) == 0)
		return 0;
	while (!r->outer_eof) {
		if ((tail = buf_tail(&r->to_fd, &room)) == NULL)
			return 0;	/* full (or out of memory: retry later) */
		n = outer_read(r->outer, tail, room);
		if (n == -1) {
			if (relay_again(errno)) {
				r->outer_rd_ev = relay_blocked_on(r, EPOLLIN);
				r->outer_rd_idle = true;
				break;
			}
			r->err = errno;
			return -1;
		}
		*progress = true;
		if (n == 0)
			r->outer_eof = true;
		else
			buf_commit(&r->to_fd, (size_t)n);
	}
	buf_release_if_empty(&r->to_fd);
	return 0;
}

static int
relay_fill_from_fd(struct relay *r, bool *progress)
{
	uint8_t	*tail;
	size_t	 room;
	ssize_t	 n;

	while (!r->fd_eof && !r->fd_rd_idle) {
		if ((tail = buf_tail(&r->to_outer, &room)) == NULL)
			return 0;
		n = recv(r->fd, tail, room, 0);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (relay_again(errno)) {
				r->fd_rd_idle = true;
				break;
			}
			r->err = errno;
			return -1;
		}
		*progress = true;
		r->hold_outer = false;	/* the next pass sends both */
		if (n == 0)
			r->fd_eof = true;
		else
			buf_commit(&r->to_outer, (size_t)n);
	}
	buf_release_if_empty(&r->to_outer);
	return 0;
}

enum relay_state
relay_run(struct relay *r, uint32_t oev, uint32_t fev)
{
	bool	 progress;

	/* Events other than "writable" (or the one a blocked read waits
	 * for) mean a read may find something: input, an end, an error. */
	if ((oev & ~(uint32_t)EPOLLOUT) != 0 || (oev & r->outer_rd_ev) != 0)
		r->outer_rd_idle = false;
	if ((fev & ~(uint32_t)EPOLLOUT) != 0)
		r->fd_rd_idle = false;

	do {
		progress = false;
		if (relay_flush_fd(r, &progress) == -1)
			return RELAY_FD_FAILED;
		if (relay_flush_outer(r, &progress) == -1)
			return RELAY_OUTER_FAILED;
		if (relay_fill_from_outer(r, &progress) == -1)
			return RELAY_OUTER_FAILED;
		if (relay_fill_from_fd(r, &progress) == -1)
			return RELAY_FD_FAILED;
	} while (progress);

	if (r->outer_eof && r->fd_eof && r->outer_shut && r->fd_shut)
		return RELAY_DONE;
	return RELAY_RUNNING;
}

/*
 * After relay_run(): pending bytes toward a side mean its last write
 * blocked, and a side we still read from with room left means its last
 * read blocked, so these interests are exactly what the blocked calls wait
 * for.
 */
uint32_t
relay_outer_events(const struct relay *r)
{
	uint32_t ev = 0;

	if (!r->outer_eof && buf_room(&r->to_fd) > 0 && !r->to_fd.denied)
		ev |= r->outer_rd_ev;
	if (!r->hold_outer && !r->frame_held &&
	    (buf_len(&r->to_outer) > 0 || (r->fd_eof && !r->outer_shut)))
		ev |= r->outer_wr_ev;
	/* Paused for memory: outer_wr_ev may still carry the EPOLLIN of the
	 * last read that blocked; readable input would wake us in a loop
	 * (TLS 1.3 writes never need to read; errors wake us anyway). */
	if (r->to_fd.denied && !r->outer_eof)
		ev &= ~(uint32_t)EPOLLIN;
	return ev;
}

uint32_t
relay_fd_events(const struct relay *r)
{
	uint32_t ev = 0;

	if (r->fd == -1)
		return 0;
	if (!r->fd_eof && buf_room(&r->to_outer) > 0 && !r->to_outer.denied)
		ev |= EPOLLIN;
	if (buf_len(&r->to_fd) > 0)
		ev |= EPOLLOUT;
	return ev;
}
