/*
 * HTTP/1.x message ends in a cover site's streams (see httpframe.h).
 *
 * One small parser, run on each direction: start line, header lines,
 * then a Content-Length or chunked body.  Lines are kept only up to
 * HTTPFRAME_LINE bytes (enough for every header it reads) plus their last
 * eight bytes (a request line's "HTTP/1.1", however long its target);
 * bodies are skipped, not copied.  The requests are parsed as they go to
 * the cover, so a response's request is always known before the response
 * arrives; the responses are parsed lazily, from the unsent bytes, up to
 * the first end, which is all the next record needs.
 */
#include "config.h"

#include "server/httpframe.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "wire/httphdr.h"

#define HTTPFRAME_LINE		64	/* bytes a line keeps */
#define HTTPFRAME_QUEUE		64	/* requests awaiting an answer */
#define HTTP_1_PREFIX		0x485454502f312eULL	/* "HTTP/1." */

enum msg_state {
	MSG_START,		/* request or status line */
	MSG_HEADER,
	MSG_BODY,		/* Content-Length bytes left */
	MSG_CHUNK_SIZE,
	MSG_CHUNK_DATA,
	MSG_CHUNK_END,		/* the CRLF after a chunk's data */
	MSG_TRAILER,
	MSG_LOST,		/* no longer followed */
};

struct msg {
	enum msg_state	 state;
	bool		 response;
	bool		 head;		/* a HEAD request, or the answer to one */
	bool		 method;	/* a request line's method is read */
	bool		 has_len;
	bool		 has_te;	/* Transfer-Encoding */
	bool		 chunked;	/* ... whose last coding is chunked */
	unsigned	 status;
	uint64_t	 left;		/* body or chunk bytes to come */
	uint64_t	 tail;		/* the line's last 8 bytes, CR left out */
	size_t		 linelen;
	char		 line[HTTPFRAME_LINE];
};

struct httpframe {
	struct msg	 req;
	struct msg	 rsp;
	uint64_t	 heads;		/* queued requests, oldest in bit 0 */
	unsigned	 queued;
	bool		 lost;		/* requests no longer followed */
	size_t		 parsed;	/* unsent bytes the parser has seen */
	bool		 has_end;	/* a response ends at `end` */
	size_t		 end;
};

struct httpframe *
httpframe_new(void)
{
	struct httpframe	*f;

	if ((f = calloc(1, sizeof(*f))) == NULL)
		return NULL;
	f->rsp.response = true;
	return f;
}

void
httpframe_free(struct httpframe *f)
{
	free(f);
}

bool
httpframe_active(const struct httpframe *f)
{
	return f->rsp.state != MSG_LOST;
}

bool
httpframe_request_open(const struct httpframe *f)
{
	return f->req.state != MSG_LOST &&
	    (f->req.state != MSG_START || f->req.linelen > 0);
}

/* ---- one message ---------------------------------------------------- */

static void
msg_next(struct msg *m)
{
	bool	response = m->response;

	memset(m, 0, sizeof(*m));
	m->response = response;
}

static void
msg_lose(struct httpframe *f, struct msg *m)
{
	m->state = MSG_LOST;
	if (!m->response)
		f->lost = true;
}

/* The line as kept, without its CR; *whole: nothing was cut off. */
static size_t
msg_text(const struct msg *m, bool *whole)
{
	size_t	n = m->linelen;

	*whole = n <= sizeof(m->line);
	if (!*whole)
		return sizeof(m->line);
	if (n > 0 && m->line[n - 1] == '\r')
		n--;
	return n;
}

/* A number of at most 15 digits in base 10 or 16, then `stop` or the end;
 * -1 if none. */
static int
msg_number(const char *s, size_t n, unsigned base, const char *stop,
    uint64_t *out)
{
	size_t		 i;
	unsigned	 d;
	char		 c;

	*out = 0;
	for (i = 0; i < n && strchr(stop, s[i]) == NULL; i++) {
		c = s[i];
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (base == 16 && c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (base == 16 && c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return -1;
		if (i == 15)
			return -1;
		*out = *out * base + d;
	}
	return i > 0 ? 0 : -1;
}

static int
msg_header(struct msg *m, const char *l, size_t n, bool whole)
{
	const char	*v;
	size_t		 vn, i;

	if (httphdr_field(l, n, "content-length", &v, &vn)) {
		if (!whole || m->has_len ||
		    msg_number(v, vn, 10, "", &m->left) == -1)
			return -1;
		m->has_len = true;
	} else if (httphdr_field(l, n, "transfer-encoding", &v, &vn)) {
		if (!whole)
			return -1;
		for (i = vn; i > 0 && v[i - 1] != ',' && v[i - 1] != ' '; i--)
			;
		m->has_te = true;
		m->chunked = vn - i == 7 && strncasecmp(v + i, "chunked",
		    7) == 0;
	}
	return 0;
}

static int
msg_start_line(struct httpframe *f, struct msg *m, const char *l, size_t n)
{
	uint64_t	 st;

	if (m->response) {
		if (n < 12 || strncmp(l, "HTTP/1.", 7) != 0 || l[8] != ' ' ||
		    msg_number(l + 9, 3, 10, "", &st) == -1 ||
		    (n > 12 && l[12] != ' '))
			return -1;
		m->status = (unsigned)st;
		return 0;
	}
	/* A request line ends in HTTP/1.x; a CONNECT's answer is a tunnel. */
	if ((m->tail >> 8) != HTTP_1_PREFIX ||
	    (m->tail & 0xff) < '0' || (m->tail & 0xff) > '9' ||
	    (n >= 8 && strncmp(l, "CONNECT ", 8) == 0) ||
	    f->queued == HTTPFRAME_QUEUE)
		return -1;
	m->head = n >= 5 && strncmp(l, "HEAD ", 5) == 0;
	f->heads |= (uint64_t)m->head << f->queued++;
	return 0;
}

/* The end of a header block: where the message goes on, or ends. */
static int
msg_headers_end(struct httpframe *f, struct msg *m, bool *done)
{
	if (m->response) {
		if (m->status / 100 == 1) {	/* interim: its request waits */
			if (m->status == 101)
				return -1;
			goto done;
		}
		if (f->queued == 0 && f->lost)
			return -1;	/* whose answer this is is unknown */
		if (f->queued > 0) {
			m->head = f->heads & 1;
			f->heads >>= 1;
			f->queued--;
		}
		if (m->head || m->status == 204 || m->status == 304)
			goto done;
		if (m->has_te && !m->chunked)
			return -1;	/* until the close */
		if (!m->chunked && !m->has_len)
			return -1;	/* until the close */
	} else if (m->has_te && !m->chunked)
		return -1;
	if (m->chunked) {
		m->state = MSG_CHUNK_SIZE;
		return 0;
	}
	if (m->has_len && m->left > 0) {
		m->state = MSG_BODY;
		return 0;
	}
done:
	msg_next(m);
	*done = true;
	return 0;
}

/* One whole line (LF seen). */
static int
msg_line(struct httpframe *f, struct msg *m, bool *done)
{
	bool		 whole;
	size_t		 n = msg_text(m, &whole);
	const char	*l = m->line;

	switch (m->state) {
	case MSG_START:
		if (n == 0 && !m->response)
			return 0;	/* empty lines before a request */
		if (msg_start_line(f, m, l, n) == -1)
			return -1;
		m->state = MSG_HEADER;
		return 0;
	case MSG_HEADER:
		if (n == 0)
			return msg_headers_end(f, m, done);
		return msg_header(m, l, n, whole);
	case MSG_CHUNK_SIZE:
		if (msg_number(l, n, 16, "; \t", &m->left) == -1)
			return -1;
		m->state = m->left == 0 ? MSG_TRAILER : MSG_CHUNK_DATA;
		return 0;
	case MSG_CHUNK_END:
		if (n != 0)
			return -1;
		m->state = MSG_CHUNK_SIZE;
		return 0;
	case MSG_TRAILER:
		if (n == 0) {
			msg_next(m);
			*done = true;
		}
		return 0;
	default:
		return -1;
	}
}

/* A request line's byte before its method ends: nginx takes A-Z, '_'
 * and '-' (and skips empty lines before a request). */
static bool
msg_method_char(struct msg *m, uint8_t c)
{
	if (c == ' ' && m->linelen > 0) {
		m->method = true;
		return true;
	}
	return (c >= 'A' && c <= 'Z') || c == '_' || c == '-' || c == '\r' ||
	    c == '\n';
}

/* Feeds p[0..n) to m until a message ends (*done) or the bytes run out;
 * returns how many it took. */
static size_t
msg_feed(struct httpframe *f, struct msg *m, const uint8_t *p, size_t n,
    bool *done)
{
	size_t	i = 0, k;

	*done = false;
	while (i < n && m->state != MSG_LOST && !*done) {
		if (m->state == MSG_BODY || m->state == MSG_CHUNK_DATA) {
			k = n - i < m->left ? n - i : (size_t)m->left;
			i += k;
			if ((m->left -= k) > 0)
				continue;
			if (m->state == MSG_CHUNK_DATA)
				m->state = MSG_CHUNK_END;
			else {
				msg_next(m);
				*done = true;
			}
			continue;
		}
		if (m->response && m->state == MSG_START && m->linelen < 7 &&
		    p[i] != (uint8_t)"HTTP/1."[m->linelen]) {
			msg_lose(f, m);	/* not HTTP: nothing is owed */
			break;
		}
		if (!m->response && m->state == MSG_START && !m->method &&
		    !msg_method_char(m, p[i])) {
			msg_lose(f, m);	/* nginx answers 400 at once */
			break;
		}
		if (p[i] != '\n') {
			if (p[i] != '\r')
				m->tail = m->tail << 8 | p[i];
			if (m->linelen < sizeof(m->line))
				m->line[m->linelen] = (char)p[i];
			m->linelen++;
			i++;
			continue;
		}
		i++;
		if (msg_line(f, m, done) == -1) {
			msg_lose(f, m);
			break;
		}
		m->linelen = 0;
		m->tail = 0;
	}
	return i;
}

/* The cover owes more of the response it has begun. */
static bool
msg_owed(const struct msg *m)
{
	switch (m->state) {
	case MSG_START:
		return m->linelen > 0;
	case MSG_LOST:
		return false;
	default:
		return true;
	}
}

/* ---- the streams ---------------------------------------------------- */

void
httpframe_requests(struct httpframe *f, const uint8_t *p, size_t n)
{
	size_t	k;
	bool	done;

	while (n > 0 && f->req.state != MSG_LOST) {
		k = msg_feed(f, &f->req, p, n, &done);
		p += k;
		n -= k;
	}
}

size_t
httpframe_record(struct httpframe *f, const uint8_t *p, size_t n, bool eof)
{
	struct msg	*m = &f->rsp;
	size_t		 lim;
	bool		 done;

	while (!f->has_end && f->parsed < n && m->state != MSG_LOST) {
		f->parsed += msg_feed(f, m, p + f->parsed, n - f->parsed,
		    &done);
		if (done) {
			f->has_end = true;
			f->end = f->parsed;
		}
	}
	lim = f->has_end ? f->end : n;
	if (lim >= HTTPFRAME_RECORD)
		return HTTPFRAME_RECORD;
	if (f->has_end || eof || !msg_owed(m))
		return lim;
	return 0;
}

void
httpframe_sent(struct httpframe *f, size_t n)
{
	f->parsed = n < f->parsed ? f->parsed - n : 0;
	if (!f->has_end)
		return;
	if (n < f->end)
		f->end -= n;
	else
		f->has_end = false;
}
