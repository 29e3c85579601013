/*
 * sd_notify(3) as systemd documents the protocol: $NOTIFY_SOCKET is a
 * file system path ("/run/systemd/notify") or, with a leading '@', an
 * abstract name; the state is one datagram of newline-separated
 * assignments.  A socket per message: there are four kinds, each rare.
 */
#include "config.h"

#include "daemon/notify.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "core/log.h"

static bool	notify_stopped;

int
notify_send(const char *state)
{
	const char		*path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un	 sun;
	socklen_t		 len;
	size_t			 n;
	ssize_t			 w;
	int			 fd;

	if (path == NULL || *path == '\0')
		return 1;
	n = strlen(path);
	/* Linux's vsock: addresses (systemd 254) are not for us to reach. */
	if ((path[0] != '/' && path[0] != '@') || n < 2 ||
	    n >= sizeof(sun.sun_path)) {
		log_warnx("NOTIFY_SOCKET=%s: not a path or an abstract name",
		    path);
		return -1;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, path, n);
	if (path[0] == '@')
		sun.sun_path[0] = '\0';	/* abstract: the length is the name's */
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n +
	    (path[0] == '/'));
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1) {
		log_warn("notify: socket");
		return -1;
	}
	do
		w = sendto(fd, state, strlen(state), MSG_NOSIGNAL,
		    (struct sockaddr *)&sun, len);
	while (w == -1 && errno == EINTR);
	if (w == -1)
		log_warn("notify %s", path);
	close(fd);
	return w == -1 ? -1 : 0;
}

void
notify_ready(void)
{
	if (!notify_stopped)
		(void)notify_send("READY=1");
}

/* MONOTONIC_USEC: systemd (253, Type=notify-reload) tells by it that
 * this reload began after the signal it sent. */
void
notify_reloading(void)
{
	struct timespec	ts;
	char		msg[64];

	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu",
	    (unsigned long long)ts.tv_sec * 1000000ULL +
	    (unsigned long long)ts.tv_nsec / 1000ULL);
	(void)notify_send(msg);
}

void
notify_stopping(void)
{
	if (notify_stopped)
		return;
	notify_stopped = true;
	(void)notify_send("STOPPING=1");
}
