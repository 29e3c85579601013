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
 */
#ifndef TUNSPLIT_CONTROL_H
#define TUNSPLIT_CONTROL_H

#include <stdbool.h>
#include <stddef.h>

struct conf;
struct control;
struct flow_env;
struct flow_udp;
struct loop;
struct sess_env;

#define CONTROL_CLIENTS_MAX	8		/* per listener */
#define CONTROL_OUT_MAX		(4 * 1024 * 1024)
#define CONTROL_TIMEOUT_MS	5000

/* Opens the control socket and the metrics listener that conf asks for
 * (either may be off).  Call before privileges are dropped.  NULL on
 * failure (logged): another daemon holds the socket, or binding failed. */
struct control *control_new_client(struct loop *l, const struct conf *c,
    struct flow_env *env);
struct control *control_new_server(struct loop *l, const struct conf *c,
    struct sess_env *env);
/* The client's UDP associations and ICMP echo sessions, once set up. */
void control_set_udp(struct control *ctl, struct flow_udp *udp);
/* Closes everything and removes the socket file; accepts NULL. */
void control_free(struct control *ctl);

/* The answer to one command line (without its newline), as the control
 * socket would send it: a malloc'd buffer in *out.  Returns 0, or -1 for
 * an unknown command (*out then holds the error text). */
int control_answer(struct control *ctl, const char *line, char **out,
    size_t *outlen);

#endif
