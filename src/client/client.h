/* The client role: TUN + lwIP + flows + outer streams on one loop. */
#ifndef TUNSPLIT_CLIENT_H
#define TUNSPLIT_CLIENT_H

struct conf;

/* Runs until SIGINT/SIGTERM.  Returns the process exit status. */
int client_run(const struct conf *c);

#endif
