/* notify: sd_notify's datagrams to $NOTIFY_SOCKET, a path or an
 * abstract name; nothing without it. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "core/log.h"
#include "daemon/notify.h"

struct sink {
	int	fd;
	char	path[108];
};

/* A datagram socket where systemd's would be: a file, or abstract. */
static void
sink_open(struct sink *s, bool abstract)
{
	struct sockaddr_un	sun;
	socklen_t		len;
	struct timeval		tv = { 2, 0 };

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (abstract) {
		snprintf(s->path, sizeof(s->path), "@tunsplit-test-notify-%ld",
		    (long)getpid());
		memcpy(sun.sun_path + 1, s->path + 1, strlen(s->path) - 1);
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
		    strlen(s->path));
	} else {
		snprintf(s->path, sizeof(s->path), "%s/tunsplit-notify-%ld",
		    getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp",
		    (long)getpid());
		(void)unlink(s->path);
		memcpy(sun.sun_path, s->path, strlen(s->path));
		len = sizeof(sun);
	}
	assert_true((s->fd = socket(AF_UNIX, SOCK_DGRAM, 0)) >= 0);
	assert_int_equal(bind(s->fd, (struct sockaddr *)&sun, len), 0);
	assert_int_equal(setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
	    sizeof(tv)), 0);
	assert_int_equal(setenv("NOTIFY_SOCKET", s->path, 1), 0);
}

static void
sink_close(struct sink *s)
{
	close(s->fd);
	if (s->path[0] == '/')
		(void)unlink(s->path);
	unsetenv("NOTIFY_SOCKET");
}

/* The next datagram, as a string. */
static const char *
sink_read(struct sink *s)
{
	static char	buf[256];
	ssize_t		n;

	n = recv(s->fd, buf, sizeof(buf) - 1, 0);
	assert_true(n >= 0);
	buf[n] = '\0';
	return buf;
}

static void
sink_empty(struct sink *s)
{
	char	c;

	assert_int_equal(recv(s->fd, &c, 1, MSG_DONTWAIT), -1);
	assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
}

static unsigned long long
mono_usec(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000ULL +
	    (unsigned long long)ts.tv_nsec / 1000ULL;
}

/* A daemon's life as systemd sees it; STOPPING=1 once, then silence. */
static void
life(bool abstract)
{
	struct sink		 s;
	const char		*m;
	unsigned long long	 t0, t1, t;

	sink_open(&s, abstract);
	assert_int_equal(notify_send("STATUS=x"), 0);
	assert_string_equal(sink_read(&s), "STATUS=x");
	notify_ready();
	assert_string_equal(sink_read(&s), "READY=1");

	t0 = mono_usec();
	notify_reloading();
	t1 = mono_usec();
	m = sink_read(&s);
	assert_int_equal(sscanf(m, "RELOADING=1\nMONOTONIC_USEC=%llu", &t), 1);
	assert_true(t >= t0 && t <= t1);
	assert_null(strchr(strchr(m, '=') + 1, ' '));
	notify_ready();
	assert_string_equal(sink_read(&s), "READY=1");

	notify_stopping();
	assert_string_equal(sink_read(&s), "STOPPING=1");
	notify_stopping();
	notify_ready();		/* a stopping daemon is not ready again */
	sink_empty(&s);
	sink_close(&s);
}

static void
test_path(void **state)
{
	(void)state;
	life(false);
}

/* Runs in a child: notify_stopping's once-only flag is per process. */
static void
test_abstract(void **state)
{
	pid_t	pid;
	int	st;

	(void)state;
	fflush(stdout);
	assert_true((pid = fork()) >= 0);
	if (pid == 0) {
		/* cmocka's asserts in a child: exit status carries them. */
		life(true);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void
test_no_socket(void **state)
{
	(void)state;
	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(notify_send("READY=1"), 1);
	assert_int_equal(setenv("NOTIFY_SOCKET", "", 1), 0);
	assert_int_equal(notify_send("READY=1"), 1);
	unsetenv("NOTIFY_SOCKET");
}

/* What we cannot reach: said (a warning) and -1, never a crash. */
static void
test_bad_addresses(void **state)
{
	static const char *const bad[] = {
		"relative/path", "vsock:2:1234", "@", "/",
		"/nonexistent/tunsplit-notify",
	};
	char	long_path[200];
	size_t	i;

	(void)state;
	log_init(LOG_LVL_ERROR, false, NULL);	/* the warnings are expected */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(setenv("NOTIFY_SOCKET", bad[i], 1), 0);
		assert_int_equal(notify_send("READY=1"), -1);
	}
	memset(long_path, 'a', sizeof(long_path) - 1);
	long_path[0] = '/';
	long_path[sizeof(long_path) - 1] = '\0';
	assert_int_equal(setenv("NOTIFY_SOCKET", long_path, 1), 0);
	assert_int_equal(notify_send("READY=1"), -1);
	unsetenv("NOTIFY_SOCKET");
	log_init(LOG_LVL_INFO, false, NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_socket),
		cmocka_unit_test(test_bad_addresses),
		cmocka_unit_test(test_abstract),
		cmocka_unit_test(test_path),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
