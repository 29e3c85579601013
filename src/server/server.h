/* The server role: TLS listeners, accepting, signals and reload on one
 * loop (sessions: server/sess/, the egress policy: server/egress.h). */
#ifndef TUNSPLIT_SERVER_H
#define TUNSPLIT_SERVER_H

#include <stdbool.h>
#include <stddef.h>

struct conf;

/* Runs until SIGINT/SIGTERM.  Returns the process exit status. */
int server_run(const struct conf *c);

#endif
