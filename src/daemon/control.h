/*
 * The control socket and the metrics endpoint: a unix stream socket that
 * answers one-line commands (`tunsplit status`), and an optional HTTP
 * listener (loopback by default) serving the Prometheus text format.
 * Both are served by the role's loop: non-blocking, a few clients at a
 * time, each with a bounded answer and a deadline.
 *
 * Commands on the control socket, one line each, answered then closed:
 *
 *   status [json] [flows]    the status snapshot (status.h)
 *   metrics                  the same counters in Prometheus format
 *   route-test NET PORT SRC DEST
 *                            the outbound a flow would take, and why
 *                            (client/route_test.h)
 *   select GROUP MEMBER      a select group's member (client/group.h)
 */
#ifndef TUNSPLIT_CONTROL_H
#define TUNSPLIT_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct conf;
struct control;
struct loop;
struct status_fill;

#define CONTROL_CLIENTS_MAX	8		/* per listener */
#define CONTROL_OUT_MAX		(4 * 1024 * 1024)
#define CONTROL_TIMEOUT_MS	5000

/*
 * The role behind the socket.  The control socket knows nothing of
 * clients or servers: each snapshot is filled by the role (status.h says
 * how), which keeps this file free of either role's internals.
 */
struct control_role {
	/* Live flows or sessions now (the most a flow list can hold). */
	size_t	(*live)(void *arg);
	/* The role's counters into sf->st; with sf->flows, one entry per
	 * live flow or session (status_flow_add). */
	void	(*fill)(void *arg, struct status_fill *sf);
	/* The answer to route-test's request into fp, -1 if it is not
	 * one; NULL: the role has no rules. */
	int	(*route_test)(void *arg, const char *req, FILE *fp);
	/* select's "GROUP MEMBER": the answer into fp, -1 if refused;
	 * NULL: the role has no groups. */
	int	(*select)(void *arg, const char *req, FILE *fp);
	void	*arg;
};

/* A snapshot as the control socket makes it (version, pid, uptime, then
 * role->fill); with flows, *list gets the malloc'd flow list st points
 * to (free it) unless fill pointed st->flows at a list of its own (a
 * client's merged one, which the client keeps until its next fill).
 * For a client's workers, which have no socket of their own. */
struct status;
struct status_flow;
void control_role_snapshot(const struct control_role *role, uint64_t now_ms,
    struct status *st, bool flows, struct status_flow **list);

/* Opens the control socket and the metrics listener that conf asks for
 * (either may be off).  Call before privileges are dropped.  NULL on
 * failure (logged): another daemon holds the socket, or binding failed. */
struct control *control_new(struct loop *l, const struct conf *c,
    const struct control_role *role);
/* Closes everything and removes the socket file; accepts NULL. */
void control_free(struct control *ctl);

/* The answer to one command line (without its newline), as the control
 * socket would send it: a malloc'd buffer in *out.  Returns 0, or -1 for
 * an unknown command (*out then holds the error text). */
int control_answer(struct control *ctl, const char *line, char **out,
    size_t *outlen);

#endif
