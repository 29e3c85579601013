/* Socket helpers shared by client and server. */
#ifndef TUNSPLIT_SOCK_H
#define TUNSPLIT_SOCK_H

#include <stdbool.h>
#include <stdint.h>

struct addr;

/* Non-blocking, close-on-exec TCP socket with TCP_NODELAY, congestion
 * control cc (NULL/"" = system default; unavailable -> logged once,
 * default kept), SO_MARK mark (0 = none), connect() started.  Returns the
 * fd (connect may still be in progress) or -1 with errno set. */
int  sock_connect(const struct addr *a, const char *cc, uint32_t mark);
/* After EPOLLOUT on a connecting socket: 0 connected, else the errno. */
int  sock_connect_error(int fd);
/* Listening non-blocking socket (SO_REUSEADDR, optional SO_REUSEPORT). */
int  sock_listen(const struct addr *a, bool reuseport, int backlog);
int  sock_set_nonblock(int fd);
int  sock_set_cc(int fd, const char *cc);	/* 0 or -1 (logged once) */
void sock_set_nodelay(int fd);
void sock_close_rst(int fd);			/* SO_LINGER 0 + close */
/* TCP_INFO of fd: segments sent and retransmitted so far.  0, or -1. */
int  sock_tcp_retrans(int fd, uint32_t *segs, uint32_t *rtx);

#endif
