/*
 * SIGINT, SIGTERM and SIGHUP as loop events, the same for both roles.
 * See daemon.h.
 *
 * The three are blocked for the whole process and read from a signalfd,
 * so a handler never runs between two statements of the loop: a reload
 * or a drain starts from a loop event like any other.  Children that
 * exec (tunsplit-route) unblock them again (daemon_route_run).
 */
#include "config.h"

#include "daemon/daemon.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>

#include "core/log.h"
#include "core/loop.h"
#include "daemon/notify.h"

static void
daemon_on_signal(struct loop_fd *lfd, uint32_t revents)
{
	struct daemon_signals	*s = container_of(lfd, struct daemon_signals,
				    lfd);
	struct signalfd_siginfo	 si;

	(void)revents;
	if (read(s->fd, &si, sizeof(si)) != (ssize_t)sizeof(si))
		return;
	if (si.ssi_signo == SIGHUP) {
		/* READY=1 after a failed reload too: the old one still runs. */
		notify_reloading();
		(void)daemon_reload(s->adopt, s->arg);
		notify_ready();
		return;
	}
	notify_stopping();
	daemon_drain_signal(s->drain, (int)si.ssi_signo);
}

int
daemon_signals_open(struct daemon_signals *s, struct loop *l,
    struct daemon_drain *drain,
    void (*adopt)(void *arg, const struct conf *n), void *arg)
{
	sigset_t	 set;
	int		 fd;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->drain = drain;
	s->adopt = adopt;
	s->arg = arg;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, &s->oldmask) == -1) {
		log_warn("sigprocmask");
		return -1;
	}
	s->masked = true;
	if ((fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) == -1) {
		log_warn("signalfd");
		return -1;
	}
	if (loop_fd_add(l, &s->lfd, fd, EPOLLIN, daemon_on_signal) == -1) {
		log_warn("epoll signalfd");
		close(fd);
		return -1;
	}
	s->fd = fd;
	s->loop = l;
	return 0;
}

void
daemon_signals_close(struct daemon_signals *s)
{
	if (s->loop != NULL) {
		loop_fd_del(s->loop, &s->lfd);
		close(s->fd);
		s->loop = NULL;
		s->fd = -1;
	}
	if (s->masked)
		(void)sigprocmask(SIG_SETMASK, &s->oldmask, NULL);
	s->masked = false;
}
