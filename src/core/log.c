/*
 * Logging to stderr (with a local timestamp) or to syslog.  One line per
 * event; every public function checks the level before formatting so that
 * disabled debug logging costs a comparison.  When stderr is the journal
 * (systemd's JOURNAL_STREAM names its device and inode), lines carry an
 * sd-daemon "<N>" priority instead of a timestamp: journald keeps both.
 */
#include "config.h"

#include "core/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include <openssl/err.h>

#define LOG_LINE_MAX	1024

/* Level and flows change on a reload while the server's workers log. */
static _Atomic enum log_level log_level = LOG_LVL_INFO;
static bool		 log_to_syslog;
/* stderr is journald's stream: -1 until log_init or the first line (the
 * loader may warn before log_init). */
static int		 log_journal = -1;
static atomic_bool	 log_flows;	/* per-flow lines at info, not debug */
static bool		 log_copy_stderr;	/* warnings also to stderr */
/* openlog() keeps the pointer, so the ident lives here. */
static char		 log_ident[64] = "tunsplit";
static char		 log_tag[24];	/* "worker 1: ", or empty */

static const char *const log_level_names[] = {
	[LOG_LVL_ERROR] = "error",
	[LOG_LVL_WARN] = "warn",
	[LOG_LVL_INFO] = "info",
	[LOG_LVL_DEBUG] = "debug",
};

static const int log_syslog_prio[] = {
	[LOG_LVL_ERROR] = LOG_ERR,
	[LOG_LVL_WARN] = LOG_WARNING,
	[LOG_LVL_INFO] = LOG_INFO,
	[LOG_LVL_DEBUG] = LOG_DEBUG,
};

/*
 * systemd sets JOURNAL_STREAM=DEV:INO for a service whose stderr is the
 * journal; a process that inherits the variable but whose stderr went
 * elsewhere (a redirect, a terminal) must not match, hence the fstat.
 */
bool
log_stderr_is_journal(void)
{
	const char		*v = getenv("JOURNAL_STREAM");
	unsigned long long	 dev, ino;
	struct stat		 st;
	int			 n = 0;

	if (v == NULL || sscanf(v, "%llu:%llu%n", &dev, &ino, &n) != 2 ||
	    v[n] != '\0' || fstat(STDERR_FILENO, &st) == -1)
		return false;
	return (unsigned long long)st.st_dev == dev &&
	    (unsigned long long)st.st_ino == ino;
}

void
log_init(enum log_level level, bool use_syslog, const char *ident)
{
	if (log_to_syslog)
		closelog();
	log_set_level(level);
	if (ident != NULL && *ident != '\0')
		snprintf(log_ident, sizeof(log_ident), "%s", ident);
	log_to_syslog = use_syslog;
	log_journal = !use_syslog && log_stderr_is_journal() ? 1 : 0;
	if (use_syslog)
		openlog(log_ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void
log_set_tag(const char *tag)
{
	if (tag == NULL || *tag == '\0')
		log_tag[0] = '\0';
	else
		snprintf(log_tag, sizeof(log_tag), "%s: ", tag);
}

void
log_set_level(enum log_level level)
{
	if (level > LOG_LVL_DEBUG)
		level = LOG_LVL_DEBUG;
	log_level = level;
}

void
log_stderr_copy(bool on)
{
	log_copy_stderr = on;
}

enum log_level
log_get_level(void)
{
	return log_level;
}

void
log_set_flows(bool on)
{
	log_flows = on;
}

enum log_level
log_flow_level(void)
{
	return log_flows ? LOG_LVL_INFO : LOG_LVL_DEBUG;
}

int
log_level_parse(const char *name)
{
	size_t	i;

	if (name == NULL)
		return -1;
	for (i = 0; i < sizeof(log_level_names) / sizeof(log_level_names[0]); i++)
		if (strcmp(name, log_level_names[i]) == 0)
			return (int)i;
	return -1;
}

static void
log_emit(enum log_level level, const char *msg)
{
	struct timespec	ts;
	struct tm	tm;
	char		stamp[32];

	if (log_to_syslog) {
		syslog(log_syslog_prio[level], "%s", msg);
		/* No timestamp: a person reads this, now. */
		if (log_copy_stderr && level <= LOG_LVL_WARN)
			fprintf(stderr, "%s: %s: %s\n", log_ident,
			    log_level_names[level], msg);
		return;
	}
	if (log_journal == -1)
		log_journal = log_stderr_is_journal() ? 1 : 0;
	if (log_journal == 1) {
		/* sd-daemon(3): "<N>" is the priority; journald stamps it. */
		fprintf(stderr, "<%d>%s: %s\n", log_syslog_prio[level],
		    log_level_names[level], msg);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	if (localtime_r(&ts.tv_sec, &tm) == NULL ||
	    strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &tm) == 0)
		snprintf(stamp, sizeof(stamp), "%lld", (long long)ts.tv_sec);
	/* One fprintf per line: stdio locks the stream, so lines from
	 * worker threads do not interleave. */
	fprintf(stderr, "%s.%03ld %s: %s\n", stamp, ts.tv_nsec / 1000000L,
	    log_level_names[level], msg);
}

/* Formats fmt, optionally followed by ": strerror(err)" (err >= 0). */
static void LOG_PRINTF(3, 0)
log_vlog(enum log_level level, int err, const char *fmt, va_list ap)
{
	char	msg[LOG_LINE_MAX], ebuf[128];
	size_t	n;

	n = strlen(log_tag);
	memcpy(msg, log_tag, n);
	vsnprintf(msg + n, sizeof(msg) - n, fmt, ap);
	if (err >= 0) {
		n = strlen(msg);
		snprintf(msg + n, sizeof(msg) - n, ": %s",
		    strerror_r(err, ebuf, sizeof(ebuf)));
	}
	log_emit(level, msg);
}

/* A line at level if the level is on; errno is left as it was. */
static void LOG_PRINTF(3, 0)
log_vat(enum log_level level, int err, const char *fmt, va_list ap)
{
	int	saved = errno;

	if (log_level < level)
		return;
	log_vlog(level, err, fmt, ap);
	errno = saved;
}

void
log_warn(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vat(LOG_LVL_WARN, errno, fmt, ap);
	va_end(ap);
}

void
log_warnx(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vat(LOG_LVL_WARN, -1, fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vat(LOG_LVL_INFO, -1, fmt, ap);
	va_end(ap);
}

void
log_at(enum log_level level, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vat(level, -1, fmt, ap);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vat(LOG_LVL_DEBUG, -1, fmt, ap);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	va_list	ap;
	int	saved = errno;

	va_start(ap, fmt);
	log_vlog(LOG_LVL_ERROR, saved, fmt, ap);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vlog(LOG_LVL_ERROR, -1, fmt, ap);
	va_end(ap);
	exit(1);
}

/*
 * The queue is drained even when warnings are filtered out: stale entries
 * would otherwise be blamed on the next, unrelated failure.
 */
void
log_ssl_errors(const char *fmt, ...)
{
	va_list		 ap;
	char		 msg[LOG_LINE_MAX], estr[256];
	const char	*data;
	unsigned long	 e;
	int		 flags, saved = errno;
	bool		 any = false;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	while ((e = ERR_get_error_all(NULL, NULL, NULL, &data, &flags)) != 0) {
		any = true;
		if (log_level < LOG_LVL_WARN)
			continue;
		ERR_error_string_n(e, estr, sizeof(estr));
		if (data != NULL && *data != '\0' && (flags & ERR_TXT_STRING))
			log_warnx("%s: %s (%s)", msg, estr, data);
		else
			log_warnx("%s: %s", msg, estr);
	}
	if (!any)
		log_warnx("%s", msg);
	errno = saved;
}
