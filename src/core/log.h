/* Logging: stderr (journald's priority prefixes when stderr is the
 * journal) or syslog, one line per event.  Never log secrets. */
#ifndef TUNSPLIT_LOG_H
#define TUNSPLIT_LOG_H

#include <stdbool.h>

enum log_level { LOG_LVL_ERROR, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

void log_init(enum log_level level, bool use_syslog, const char *ident);
void log_set_level(enum log_level level);
/* A prefix for every line of this process ("worker 1"), NULL for none. */
void log_set_tag(const char *tag);
/* While on, and logging to syslog, warnings and errors are written to
 * stderr too: `run -d` says why it failed until it has detached. */
void log_stderr_copy(bool on);
enum log_level log_get_level(void);
/* The level of the one-line summary a flow, session or association
 * logs when it ends: info with log.flows, else debug (a router's log
 * should not get a line per connection).  Internal failures log at warn
 * regardless. */
void log_set_flows(bool on);
enum log_level log_flow_level(void);
/* JOURNAL_STREAM names stderr's device and inode (log_init checks it). */
bool log_stderr_is_journal(void);
/* "error" "warn" "info" "debug" -> level; -1 when unknown. */
int log_level_parse(const char *name);

#define LOG_PRINTF(a, b) __attribute__((format(printf, a, b)))
void log_warn(const char *fmt, ...) LOG_PRINTF(1, 2);   /* appends strerror(errno) */
void log_warnx(const char *fmt, ...) LOG_PRINTF(1, 2);
void log_info(const char *fmt, ...) LOG_PRINTF(1, 2);
void log_debug(const char *fmt, ...) LOG_PRINTF(1, 2);
/* At a level chosen at run time (one line, warn or info by cause). */
void log_at(enum log_level level, const char *fmt, ...) LOG_PRINTF(2, 3);
/* Start-up failures and broken invariants only: log and exit(1). */
void fatal(const char *fmt, ...) LOG_PRINTF(1, 2) __attribute__((noreturn));
void fatalx(const char *fmt, ...) LOG_PRINTF(1, 2) __attribute__((noreturn));
/* Logs and clears OpenSSL's error queue, prefixed by the message. */
void log_ssl_errors(const char *fmt, ...) LOG_PRINTF(1, 2);

#endif
