/* log: line format, levels, errno, OpenSSL error queue, fatal exit,
 * journald's priority prefixes, the per-flow level. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <openssl/err.h>

#include "core/log.h"

static int	saved_stderr = -1;
static int	capfd = -1;
static char	out[8192];

/* Sends fd 2 to a fresh memory file until capture_end. */
static void
capture_begin(void)
{
	fflush(stderr);
	assert_true((capfd = memfd_create("log", MFD_CLOEXEC)) >= 0);
	assert_true((saved_stderr = dup(2)) >= 0);
	assert_int_equal(dup2(capfd, 2), 2);
}

static const char *
capture_end(void)
{
	ssize_t	n;

	fflush(stderr);
	assert_int_equal(dup2(saved_stderr, 2), 2);
	close(saved_stderr);
	n = pread(capfd, out, sizeof(out) - 1, 0);
	assert_true(n >= 0);
	out[n] = '\0';
	close(capfd);
	return out;
}

static void
assert_matches(const char *s, const char *re)
{
	regex_t	r;

	assert_int_equal(regcomp(&r, re, REG_EXTENDED | REG_NOSUB), 0);
	if (regexec(&r, s, 0, NULL, 0) != 0)
		fail_msg("'%s' does not match /%s/", s, re);
	regfree(&r);
}

#define STAMP	"^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3} "

static void
test_format_and_levels(void **state)
{
	(void)state;
	log_init(LOG_LVL_DEBUG, false, "test");
	assert_int_equal(log_get_level(), LOG_LVL_DEBUG);
	capture_begin();
	log_info("hello %d", 42);
	assert_matches(capture_end(), STAMP "info: hello 42\n$");

	capture_begin();
	log_debug("d");
	log_warnx("w %s", "x");
	assert_matches(capture_end(), STAMP "debug: d\n" "[-0-9: .]+warn: w x\n$");

	log_set_level(LOG_LVL_WARN);
	capture_begin();
	log_debug("hidden");
	log_info("hidden");
	log_warnx("shown");
	assert_matches(capture_end(), STAMP "warn: shown\n$");

	log_set_level(LOG_LVL_ERROR);
	capture_begin();
	log_warnx("hidden");
	errno = EIO;
	log_warn("hidden");
	assert_string_equal(capture_end(), "");
	log_set_level(LOG_LVL_INFO);
}

static void
test_warn_appends_errno(void **state)
{
	(void)state;
	log_init(LOG_LVL_INFO, false, NULL);
	capture_begin();
	errno = ENOENT;
	log_warn("open %s", "/nonexistent");
	/* errno survives logging, so callers may log and then return it. */
	assert_int_equal(errno, ENOENT);
	errno = EPERM;
	log_warnx("no errno here");
	assert_int_equal(errno, EPERM);
	assert_matches(capture_end(), STAMP "warn: open /nonexistent: "
	    "No such file or directory\n[^\n]+warn: no errno here\n$");
}

static void
test_long_message_truncated(void **state)
{
	char	*big = malloc(5000);

	(void)state;
	assert_non_null(big);
	memset(big, 'a', 4999);
	big[4999] = '\0';
	capture_begin();
	log_info("%s", big);
	capture_end();
	assert_true(strlen(out) < 1100);
	assert_int_equal(out[strlen(out) - 1], '\n');
	assert_non_null(strstr(out, "info: aaaa"));
	free(big);
}

static void
test_level_parse(void **state)
{
	(void)state;
	assert_int_equal(log_level_parse("error"), LOG_LVL_ERROR);
	assert_int_equal(log_level_parse("warn"), LOG_LVL_WARN);
	assert_int_equal(log_level_parse("info"), LOG_LVL_INFO);
	assert_int_equal(log_level_parse("debug"), LOG_LVL_DEBUG);
	assert_int_equal(log_level_parse("warning"), -1);
	assert_int_equal(log_level_parse("DEBUG"), -1);
	assert_int_equal(log_level_parse(""), -1);
	assert_int_equal(log_level_parse("info "), -1);
	assert_int_equal(log_level_parse(NULL), -1);
}

static void
test_ssl_errors(void **state)
{
	(void)state;
	log_init(LOG_LVL_INFO, false, NULL);
	ERR_clear_error();
	ERR_raise_data(ERR_LIB_SYS, ENOENT, "detail %d", 7);
	ERR_raise(ERR_LIB_SSL, ERR_R_MALLOC_FAILURE);
	capture_begin();
	log_ssl_errors("handshake with %s", "peer");
	assert_matches(capture_end(),
	    STAMP "warn: handshake with peer: error:[0-9A-F]+:[^\n]*\\(detail 7\\)\n"
	    "[^\n]+warn: handshake with peer: error:[0-9A-F]+:[^\n]*\n$");
	assert_int_equal(ERR_peek_error(), 0);

	/* Empty queue: the message alone. */
	capture_begin();
	log_ssl_errors("nothing queued");
	assert_matches(capture_end(), STAMP "warn: nothing queued\n$");

	/* Filtered out, but the queue is still drained. */
	log_set_level(LOG_LVL_ERROR);
	ERR_raise(ERR_LIB_SSL, ERR_R_MALLOC_FAILURE);
	capture_begin();
	log_ssl_errors("quiet");
	assert_string_equal(capture_end(), "");
	assert_int_equal(ERR_peek_error(), 0);
	log_set_level(LOG_LVL_INFO);
}

static void
call_fatal(void)
{
	errno = EACCES;
	fatal("cannot %s", "start");
}

static void
call_fatalx(void)
{
	fatalx("broken %d", 1);
}

static void
expect_exit1(void (*fn)(void), const char *re)
{
	pid_t	pid;
	int	status;

	capture_begin();
	/* The child's exit() would flush our stdout a second time. */
	fflush(stdout);
	assert_true((pid = fork()) >= 0);
	if (pid == 0) {
		log_set_level(LOG_LVL_ERROR);	/* fatal ignores the level */
		fn();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_matches(capture_end(), re);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);
}

static void
test_fatal(void **state)
{
	(void)state;
	expect_exit1(call_fatal, STAMP "error: cannot start: Permission denied\n$");
	expect_exit1(call_fatalx, STAMP "error: broken 1\n$");
}

/* Syslog mode writes nothing to stderr. */
static void
test_syslog_mode(void **state)
{
	(void)state;
	capture_begin();
	log_init(LOG_LVL_INFO, true, "tunsplit-test");
	log_info("to syslog");
	log_init(LOG_LVL_INFO, false, NULL);
	assert_string_equal(capture_end(), "");
	capture_begin();
	log_info("back");
	assert_matches(capture_end(), STAMP "info: back\n$");
}

/* JOURNAL_STREAM=DEV:INO of fd (what systemd sets for the journal). */
static void
set_journal_stream(int fd, long long ino_delta)
{
	struct stat	st;
	char		v[64];

	assert_int_equal(fstat(fd, &st), 0);
	snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)st.st_dev,
	    (unsigned long long)st.st_ino + (unsigned long long)ino_delta);
	assert_int_equal(setenv("JOURNAL_STREAM", v, 1), 0);
}

/* stderr is the journal: "<N>" priorities, no timestamp of our own. */
static void
test_journal_prefix(void **state)
{
	(void)state;
	capture_begin();
	set_journal_stream(2, 0);
	assert_true(log_stderr_is_journal());
	log_init(LOG_LVL_DEBUG, false, "test");
	log_at(LOG_LVL_ERROR, "e %d", 1);
	log_warnx("w");
	errno = ENOENT;
	log_warn("f");
	log_info("i");
	log_debug("d");
	log_init(LOG_LVL_INFO, false, NULL);
	unsetenv("JOURNAL_STREAM");
	assert_string_equal(capture_end(), "<3>error: e 1\n<4>warn: w\n"
	    "<4>warn: f: No such file or directory\n<6>info: i\n"
	    "<7>debug: d\n");
}

/* Inherited but stale (stderr went elsewhere), or malformed: no prefix. */
static void
test_journal_mismatch(void **state)
{
	static const char *const bad[] = {
		"", "1", "1:", ":1", "x:y", "1:2:3", "1:2 ",
	};
	size_t	i;

	(void)state;
	capture_begin();
	set_journal_stream(2, 1);
	assert_false(log_stderr_is_journal());
	log_init(LOG_LVL_INFO, false, NULL);
	log_info("stale");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(setenv("JOURNAL_STREAM", bad[i], 1), 0);
		assert_false(log_stderr_is_journal());
	}
	unsetenv("JOURNAL_STREAM");
	assert_false(log_stderr_is_journal());
	log_init(LOG_LVL_INFO, false, NULL);
	log_info("unset");
	assert_matches(capture_end(), STAMP "info: stale\n" "[-0-9: .]+info: "
	    "unset\n$");
}

/* Per-flow summaries: debug unless log.flows; shown at info with it. */
static void
test_flow_level(void **state)
{
	(void)state;
	log_init(LOG_LVL_INFO, false, NULL);
	assert_int_equal(log_flow_level(), LOG_LVL_DEBUG);
	capture_begin();
	log_at(log_flow_level(), "flow 1: closed");
	log_set_flows(true);
	assert_int_equal(log_flow_level(), LOG_LVL_INFO);
	log_at(log_flow_level(), "flow 2: closed");
	log_set_flows(false);
	log_at(log_flow_level(), "flow 3: closed");
	assert_matches(capture_end(), STAMP "info: flow 2: closed\n$");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_and_levels),
		cmocka_unit_test(test_warn_appends_errno),
		cmocka_unit_test(test_long_message_truncated),
		cmocka_unit_test(test_level_parse),
		cmocka_unit_test(test_ssl_errors),
		cmocka_unit_test(test_fatal),
		cmocka_unit_test(test_syslog_mode),
		cmocka_unit_test(test_journal_prefix),
		cmocka_unit_test(test_journal_mismatch),
		cmocka_unit_test(test_flow_level),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
