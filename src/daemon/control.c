/*
 * The control socket and the metrics endpoint.  See control.h.
 *
 * A client gets one answer: its request is read (bounded), the answer is
 * rendered at once into a memory stream (bounded by CONTROL_OUT_MAX) and
 * written out as the socket takes it, then the connection is closed.  A
 * client that stalls is dropped at its deadline; past CONTROL_CLIENTS_MAX
 * per listener new connections are closed at once, so a stuck status
 * reader can never hold up the flows the loop serves.
 */
#include "config.h"

#include "daemon/control.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
/* glibc's TCP_MSS would clash with lwIP's, defined by lwipopts.h below;
 * only struct tcp_info is wanted here. */
#undef TCP_MSS

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/conf.h"
#include "core/addr.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/sock.h"
#include "daemon/daemon.h"
#include "daemon/status.h"

#define CONTROL_IN_MAX	4096	/* a command line, or HTTP request headers */

enum control_kind { CONTROL_UNIX, CONTROL_HTTP };

struct control;

struct control_client {
	struct control		*ctl;
	enum control_kind	 kind;
	bool			 used;
	bool			 writing;
	struct loop_fd		 lfd;
	struct loop_timer	 timer;
	char			 in[CONTROL_IN_MAX + 1];
	size_t			 inlen;
	char			*out;
	size_t			 outlen, outoff;
};

struct control_listener {
	struct control		*ctl;
	enum control_kind	 kind;
	struct loop_fd		 lfd;
	bool			 open;
	struct control_client	 clients[CONTROL_CLIENTS_MAX];
};

struct control {
	struct loop		*loop;
	struct control_role	 role;
	struct control_listener	 unix_l;
	struct control_listener	 http_l;
	char			 path[CONF_SOCK_MAX];	/* to unlink, "" if none */
};

/* ---- snapshots ---------------------------------------------------------- */

void
control_role_snapshot(const struct control_role *role, uint64_t now_ms,
    struct status *st, bool flows, struct status_flow **list)
{
	struct status_fill	cf;
	size_t			live;

	memset(st, 0, sizeof(*st));
	memset(&cf, 0, sizeof(cf));
	cf.st = st;
	cf.now_ms = now_ms;
	st->version = PACKAGE_VERSION;
	st->pid = (long)getpid();
	st->uptime_ms = daemon_uptime_ms();
	st->draining = daemon_draining();
	st->generation = daemon_conf() != NULL ? daemon_conf()->generation : 0;
	*list = NULL;
	live = role->live(role->arg);
	if (flows) {
		cf.cap = live;
		/* calloc(0) may return NULL: keep a valid empty list. */
		cf.flows = calloc(live > 0 ? live : 1, sizeof(*cf.flows));
		if (cf.flows == NULL)
			log_warn("control: flow list");
	}
	role->fill(role->arg, &cf);
	/* A client with workers points st at a merged list of its own. */
	if (st->flows == NULL) {
		st->flows = cf.flows;
		st->nflows = cf.n;
	}
	*list = cf.flows;
}

/* Fills st; with flows, *flows gets a malloc'd list (free it). */
static void
control_snapshot(struct control *ctl, struct status *st, bool flows,
    struct status_flow **list)
{
	control_role_snapshot(&ctl->role, loop_now(ctl->loop), st, flows,
	    list);
}

static int
control_route_test(struct control *ctl, const char *req, char **out,
    size_t *outlen, bool select)
{
	FILE	*fp;
	int	 rc;
	int	(*fn)(void *, const char *, FILE *) = select ?
	    ctl->role.select : ctl->role.route_test;

	if ((fp = open_memstream(out, outlen)) == NULL)
		return -1;
	if (fn == NULL) {
		fprintf(fp, "error: %s: only a client has %s\n", select ?
		    "select" : "route-test", select ? "groups" : "rules");
		rc = -1;
	} else
		rc = fn(ctl->role.arg, req, fp);
	if (fclose(fp) != 0)
		return -1;
	return rc;
}

int
control_answer(struct control *ctl, const char *line, char **out,
    size_t *outlen)
{
	struct status		 st;
	struct status_flow	*list;
	char			 word[16];
	const char		*p = line;
	bool			 status = false, metrics = false, json = false;
	bool			 flows = false, bad = false;
	FILE			*fp;
	size_t			 n;
	int			 i;

	if (strncmp(line, "route-test ", 11) == 0)
		return control_route_test(ctl, line + 11, out, outlen, false);
	if (strncmp(line, "select ", 7) == 0)
		return control_route_test(ctl, line + 7, out, outlen, true);
	/* Words separated by blanks; the first one is the command. */
	for (i = 0; !bad; i++) {
		p += strspn(p, " \t\r");
		if (*p == '\0')
			break;
		n = strcspn(p, " \t\r");
		if (n >= sizeof(word)) {
			bad = true;
			break;
		}
		memcpy(word, p, n);
		word[n] = '\0';
		p += n;
		if (i == 0 && strcmp(word, "status") == 0)
			status = true;
		else if (i == 0 && strcmp(word, "metrics") == 0)
			metrics = true;
		else if (status && strcmp(word, "json") == 0)
			json = true;
		else if (status && strcmp(word, "flows") == 0)
			flows = true;
		else
			bad = true;
	}
	if ((fp = open_memstream(out, outlen)) == NULL)
		return -1;
	if (bad || (!status && !metrics)) {
		fprintf(fp, "error: unknown command (status [json] [flows], "
		    "metrics, route-test, select)\n");
		fclose(fp);
		return -1;
	}
	control_snapshot(ctl, &st, flows, &list);
	if (metrics)
		status_write_prometheus(&st, fp);
	else if (json)
		status_write_json(&st, fp);
	else
		status_write_text(&st, fp);
	free(list);
	if (fclose(fp) != 0)
		return -1;
	return 0;
}

/* ---- clients ------------------------------------------------------------ */

static void control_on_client(struct loop_fd *, uint32_t);

static void
control_client_close(struct control_client *cc)
{
	struct loop	*l = cc->ctl->loop;

	loop_timer_cancel(l, &cc->timer);
	loop_fd_del(l, &cc->lfd);
	close(cc->lfd.fd);
	free(cc->out);
	cc->out = NULL;
	cc->used = false;
}

static void
control_on_client_timer(struct loop_timer *t)
{
	struct control_client	*cc = container_of(t, struct control_client,
				    timer);

	log_debug("control: client timed out");
	control_client_close(cc);
}

/* Takes the answer in buf (malloc'd) and starts writing it. */
static void
control_client_reply(struct control_client *cc, char *buf, size_t len)
{
	static const char	 big[] = "error: answer too large\n";

	if (buf != NULL && len > CONTROL_OUT_MAX) {
		free(buf);
		buf = NULL;
	}
	if (buf == NULL) {
		if ((buf = strdup(big)) == NULL) {
			control_client_close(cc);
			return;
		}
		len = sizeof(big) - 1;
	}
	cc->out = buf;
	cc->outlen = len;
	cc->outoff = 0;
	cc->writing = true;
	if (loop_fd_mod(cc->ctl->loop, &cc->lfd, EPOLLOUT) == -1)
		control_client_close(cc);
}

static void
control_http_reply(struct control_client *cc, int code, const char *reason,
    const char *body, size_t bodylen, bool head)
{
	char	*buf = NULL;
	size_t	 len = 0;
	FILE	*fp;

	if ((fp = open_memstream(&buf, &len)) == NULL) {
		control_client_close(cc);
		return;
	}
	fprintf(fp, "HTTP/1.0 %d %s\r\nContent-Type: %s\r\n"
	    "Content-Length: %zu\r\n%sConnection: close\r\n\r\n", code,
	    reason, code == 200 ? "text/plain; version=0.0.4; charset=utf-8" :
	    "text/plain; charset=utf-8", bodylen,
	    code == 405 ? "Allow: GET, HEAD\r\n" : "");
	if (!head)
		fwrite(body, 1, bodylen, fp);
	if (fclose(fp) != 0) {
		free(buf);
		control_client_close(cc);
		return;
	}
	control_client_reply(cc, buf, len);
}

/*
 * The one resource: /metrics, with any query string (a scraper's params:
 * are ignored).  Everything else is 404, "/" too, so that a typo in a
 * scrape config shows up as a failed target, not as an empty one.
 */
static bool
control_http_is_metrics(const char *path)
{
	static const char	metrics[] = "/metrics";
	size_t			n = sizeof(metrics) - 1;

	return strncmp(path, metrics, n) == 0 &&
	    (path[n] == '\0' || path[n] == '?');
}

static void
control_http_request(struct control_client *cc)
{
	char	*body = NULL, *sp, *path, *ver;
	size_t	 len = 0;
	bool	 head;

	cc->in[strcspn(cc->in, "\r\n")] = '\0';
	if ((sp = strchr(cc->in, ' ')) == NULL)
		goto bad;
	*sp = '\0';
	path = sp + 1;
	if ((ver = strchr(path, ' ')) == NULL || strncmp(ver + 1, "HTTP/", 5))
		goto bad;
	*ver = '\0';
	head = strcmp(cc->in, "HEAD") == 0;
	if (!head && strcmp(cc->in, "GET") != 0) {
		control_http_reply(cc, 405, "Method Not Allowed",
		    "GET or HEAD only\n", 17, false);
		return;
	}
	if (!control_http_is_metrics(path)) {
		control_http_reply(cc, 404, "Not Found", "try /metrics\n", 13,
		    head);
		return;
	}
	if (control_answer(cc->ctl, "metrics", &body, &len) == -1) {
		free(body);
		control_http_reply(cc, 500, "Internal Server Error", "error\n",
		    6, head);
		return;
	}
	control_http_reply(cc, 200, "OK", body, len, head);
	free(body);
	return;
bad:
	control_http_reply(cc, 400, "Bad Request", "bad request\n", 12, false);
}

/* A whole request is in: a line (unix) or the headers (HTTP). */
static bool
control_request_complete(struct control_client *cc)
{
	if (cc->kind == CONTROL_UNIX)
		return memchr(cc->in, '\n', cc->inlen) != NULL;
	return strstr(cc->in, "\r\n\r\n") != NULL ||
	    strstr(cc->in, "\n\n") != NULL;
}

static void
control_client_read(struct control_client *cc)
{
	char	*out = NULL;
	size_t	 outlen = 0;
	ssize_t	 r;
	bool	 eof = false;

	r = read(cc->lfd.fd, cc->in + cc->inlen, CONTROL_IN_MAX - cc->inlen);
	if (r == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r == -1) {
		control_client_close(cc);
		return;
	}
	if (r == 0)
		eof = true;
	cc->inlen += (size_t)r;
	cc->in[cc->inlen] = '\0';
	if (!control_request_complete(cc) && !eof) {
		if (cc->inlen < CONTROL_IN_MAX)
			return;
		/* Too long to be a request of ours. */
		if (cc->kind == CONTROL_HTTP)
			control_http_reply(cc, 431, "Request Header Fields Too "
			    "Large", "too large\n", 10, false);
		else
			control_client_close(cc);
		return;
	}
	if (cc->inlen == 0) {
		control_client_close(cc);
		return;
	}
	if (cc->kind == CONTROL_HTTP) {
		control_http_request(cc);
		return;
	}
	cc->in[strcspn(cc->in, "\n")] = '\0';
	(void)control_answer(cc->ctl, cc->in, &out, &outlen);
	control_client_reply(cc, out, outlen);
}

static void
control_client_write(struct control_client *cc)
{
	ssize_t	w;

	while (cc->outoff < cc->outlen) {
		w = send(cc->lfd.fd, cc->out + cc->outoff,
		    cc->outlen - cc->outoff, MSG_NOSIGNAL);
		if (w == -1 && (errno == EAGAIN || errno == EINTR))
			return;
		if (w == -1)
			break;
		cc->outoff += (size_t)w;
	}
	control_client_close(cc);
}

static void
control_on_client(struct loop_fd *lfd, uint32_t revents)
{
	struct control_client	*cc = container_of(lfd, struct control_client,
				    lfd);

	if (cc->writing) {
		if (revents & (EPOLLOUT | EPOLLERR | EPOLLHUP))
			control_client_write(cc);
		return;
	}
	if (revents & (EPOLLIN | EPOLLERR | EPOLLHUP))
		control_client_read(cc);
}

static void
control_on_accept(struct loop_fd *lfd, uint32_t revents)
{
	struct control_listener	*ln = container_of(lfd,
				    struct control_listener, lfd);
	struct control_client	*cc = NULL;
	size_t			 i;
	int			 fd;

	(void)revents;
	while ((fd = accept4(lfd->fd, NULL, NULL,
	    SOCK_NONBLOCK | SOCK_CLOEXEC)) != -1) {
		for (i = 0, cc = NULL; i < CONTROL_CLIENTS_MAX; i++)
			if (!ln->clients[i].used) {
				cc = &ln->clients[i];
				break;
			}
		if (cc == NULL) {
			log_debug("control: too many clients; closing one");
			close(fd);
			continue;
		}
		memset(cc, 0, sizeof(*cc));
		cc->ctl = ln->ctl;
		cc->kind = ln->kind;
		if (loop_fd_add(ln->ctl->loop, &cc->lfd, fd, EPOLLIN,
		    control_on_client) == -1) {
			log_warn("control: epoll");
			close(fd);
			continue;
		}
		cc->used = true;
		loop_timer_init(&cc->timer, control_on_client_timer);
		loop_timer_set(ln->ctl->loop, &cc->timer, CONTROL_TIMEOUT_MS);
	}
	if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
	    errno != ECONNABORTED)
		log_warn("control: accept");
}

/* ---- listeners ------------------------------------------------------- */

/* The socket's directory, one level, like /run/tunsplit. */
static void
control_mkdir(const char *path)
{
	char	dir[CONF_SOCK_MAX], *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	if ((slash = strrchr(dir, '/')) == NULL || slash == dir)
		return;
	*slash = '\0';
	if (mkdir(dir, 0755) == -1 && errno != EEXIST)
		log_warn("control: mkdir %s", dir);
}

/*
 * A socket file left by a daemon that died is replaced; one that still
 * answers belongs to a running daemon, and two daemons on one control
 * socket would be a mystery for whoever runs `tunsplit status`.
 */
static int
control_unlink_stale(const char *path)
{
	struct sockaddr_un	 sun;
	struct stat		 sb;
	int			 fd, rc;

	if (lstat(path, &sb) == -1)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISSOCK(sb.st_mode)) {
		log_warnx("control: %s exists and is not a socket", path);
		return -1;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	rc = connect(fd, (struct sockaddr *)&sun, sizeof(sun));
	close(fd);
	if (rc == 0) {
		log_warnx("control: %s is in use by another daemon (set "
		    "control: to a path of its own)", path);
		return -1;
	}
	if (unlink(path) == -1) {
		log_warn("control: unlink %s", path);
		return -1;
	}
	return 0;
}

static int
control_listen_unix(struct control *ctl, const char *path)
{
	struct sockaddr_un	 sun;
	mode_t			 old;
	int			 fd, rc;

	control_mkdir(path);
	if (control_unlink_stale(path) == -1)
		return -1;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1) {
		log_warn("control: socket");
		return -1;
	}
	/* Flow destinations are private: owner and group only. */
	old = umask(0117);
	rc = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (rc == -1 || listen(fd, CONTROL_CLIENTS_MAX) == -1) {
		log_warn("control: %s", path);
		close(fd);
		return -1;
	}
	snprintf(ctl->path, sizeof(ctl->path), "%s", path);
	if (loop_fd_add(ctl->loop, &ctl->unix_l.lfd, fd, EPOLLIN,
	    control_on_accept) == -1) {
		log_warn("control: epoll");
		close(fd);
		return -1;
	}
	ctl->unix_l.open = true;
	log_info("control socket %s", path);
	return 0;
}

static int
control_listen_http(struct control *ctl, const struct addr *a)
{
	char	buf[ADDR_STRLEN];
	int	fd;

	addr_fmt(a, buf, sizeof(buf));
	if ((fd = sock_listen(a, false, CONTROL_CLIENTS_MAX)) == -1) {
		log_warn("metrics: listen on %s", buf);
		return -1;
	}
	if (loop_fd_add(ctl->loop, &ctl->http_l.lfd, fd, EPOLLIN,
	    control_on_accept) == -1) {
		log_warn("metrics: epoll");
		close(fd);
		return -1;
	}
	ctl->http_l.open = true;
	log_info("metrics on http://%s/metrics", buf);
	return 0;
}

struct control *
control_new(struct loop *l, const struct conf *c,
    const struct control_role *role)
{
	struct control	*ctl;

	if ((ctl = calloc(1, sizeof(*ctl))) == NULL) {
		log_warn("control");
		return NULL;
	}
	ctl->loop = l;
	ctl->role = *role;
	ctl->unix_l.ctl = ctl->http_l.ctl = ctl;
	ctl->unix_l.kind = CONTROL_UNIX;
	ctl->http_l.kind = CONTROL_HTTP;
	if (c->control[0] != '\0' && control_listen_unix(ctl, c->control) == -1)
		goto fail;
	if (c->has_metrics && control_listen_http(ctl, &c->metrics) == -1)
		goto fail;
	return ctl;
fail:
	control_free(ctl);
	return NULL;
}

static void
control_listener_close(struct control *ctl, struct control_listener *ln)
{
	size_t	i;

	for (i = 0; i < CONTROL_CLIENTS_MAX; i++)
		if (ln->clients[i].used)
			control_client_close(&ln->clients[i]);
	if (!ln->open)
		return;
	loop_fd_del(ctl->loop, &ln->lfd);
	close(ln->lfd.fd);
	ln->open = false;
}

void
control_free(struct control *ctl)
{
	if (ctl == NULL)
		return;
	control_listener_close(ctl, &ctl->unix_l);
	control_listener_close(ctl, &ctl->http_l);
	/* After a privilege drop the directory may not let us: the next
	 * start replaces the stale socket. */
	if (ctl->path[0] != '\0' && unlink(ctl->path) == -1 && errno != ENOENT)
		log_debug("control: unlink %s: %s", ctl->path, strerror(errno));
	free(ctl);
}
