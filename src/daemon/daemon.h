/*
 * The process around a role: running in the background (run -d), the pid
 * file, routes set up by tunsplit-route (route: auto), dropping privileges,
 * reloading the configuration on SIGHUP and draining on SIGTERM.  One
 * process, so the state here is process-wide.
 *
 * Order at start-up (main.c, then the role):
 *   daemon_init -> [daemon_background] -> daemon_pidfile -> role opens the
 *   TUN, listeners, control socket -> daemon_up (routes, privileges, tells
 *   the waiting parent) -> loop -> daemon_down (routes, pid file).  A
 *   failure before daemon_up: daemon_report(status), then exit.
 */
#ifndef TUNSPLIT_DAEMON_H
#define TUNSPLIT_DAEMON_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/loop.h"

struct addr;
struct conf;

/* live: the configuration the role runs with; SIGHUP updates it in place.
 * debug: -v was given (reloads keep the debug level). */
void daemon_init(struct conf *live, bool debug);

/* Detaches (double fork, setsid, chdir /).  The foreground process
 * stays until the daemon reports (daemon_report: its status becomes the
 * foreground's exit status) or dies first (exit 1).  Until it reports,
 * the daemon keeps the caller's stdout and stderr, and warnings and
 * errors go there as well as to syslog, so that a failed `run -d` says
 * why.  Returns 0 in the daemon, -1 on failure (logged, nothing forked). */
int  daemon_background(void);
/* Start-up is over: 0 (up: stdio goes to /dev/null) or the exit status
 * it failed with.  Once only; nothing when not in the background. */
void daemon_report(int status);

/* Creates and locks path and writes our pid; -1 (logged) when another
 * process holds the lock.  The lock lives as long as the process. */
int  daemon_pidfile(const char *path);

/* After the role has set up: runs `tunsplit-route up` (client with
 * route: auto and a tun_dev; server NULL for protocol direct or block,
 * which have none), drops to user:/group: keeping
 * CAP_NET_ADMIN, then releases a waiting `run -d` parent
 * (daemon_report(0)).  0 or -1. */
int  daemon_up(const char *tun_dev, const struct addr *server);
/* In a client worker process just forked (src/client/workers.h): the
 * pid file, the route helper and the waiting parent are the main
 * process's, and so is systemd's socket; daemon_up then only drops
 * privileges, daemon_report and daemon_down do nothing. */
void daemon_worker(void);
/* At exit: `tunsplit-route down` (if up ran), pid file removed. */
void daemon_down(void);

/*
 * SIGHUP: loads the configuration file again as a new generation and
 * validates it whole.  A setting only a restart can apply is logged and
 * kept at its running value in the new generation.  adopt() is the role's
 * reconfigure: it points its modules at the new generation (new flows use
 * it; live flows keep the one they started with); then the new generation
 * is the daemon's and the old one is let go.  0, or -1 when the file is
 * bad: the running generation stays, untouched, and adopt is not called.
 */
struct conf;
int  daemon_reload(void (*adopt)(void *arg, const struct conf *n), void *arg);
/* The live generation. */
const struct conf *daemon_conf(void);

uint64_t daemon_uptime_ms(void);
bool     daemon_draining(void);

/*
 * SIGTERM/SIGINT: the first one stops accepting (stop), then the loop
 * ends once live() is 0 or after drain_timeout; a second one ends the loop
 * at once.  The role's own cleanup then closes what is left.
 */
struct daemon_drain {
	struct loop		*loop;
	struct loop_timer	 timer;
	void			(*stop)(void *arg);
	size_t			(*live)(void *arg);
	void			*arg;
	bool			 active;
};

int  daemon_drain_init(struct daemon_drain *d, struct loop *l,
    void (*stop)(void *), size_t (*live)(void *), void *arg);
void daemon_drain_signal(struct daemon_drain *d, int signo);

/*
 * The role's signals (daemon_signals.c): SIGINT, SIGTERM and SIGHUP are
 * blocked and arrive through a signalfd watched by l.  SIGHUP is
 * daemon_reload(adopt, arg); SIGINT and SIGTERM go to drain, which need
 * only be set up before the loop runs.  A zeroed struct holds nothing.
 */
struct daemon_signals {
	struct loop		*loop;		/* set while fd is watched */
	struct loop_fd		 lfd;
	int			 fd;
	bool			 masked;
	sigset_t		 oldmask;	/* restored by close */
	struct daemon_drain	*drain;
	void			(*adopt)(void *arg, const struct conf *n);
	void			*arg;
};

/* 0, or -1 (logged; what was done is undone by daemon_signals_close). */
int  daemon_signals_open(struct daemon_signals *s, struct loop *l,
    struct daemon_drain *drain,
    void (*adopt)(void *arg, const struct conf *n), void *arg);
/* Closes the signalfd and restores the signal mask; idempotent. */
void daemon_signals_close(struct daemon_signals *s);

#endif
