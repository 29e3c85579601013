/*
 * Configuration generations across a reload (daemon_reload): a good file
 * becomes a new generation that the role adopts, while a holder of the
 * old one (a flow that started before) still reads the old values; a
 * setting only a restart can apply is carried over at its running value;
 * a broken file, or one of the other role, changes nothing at all; a
 * file named by a relative path is found again from another directory.
 */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "conf/conf.h"
#include "daemon/daemon.h"

#define KEY	"UR8GBfXkCWILEa357of526YctXNYj5edwp3e59D7Z7I="

static char	 dir[64], path[128];
static int	 nadopt;
static const struct conf *adopted;

static void
write_conf(const char *fmt, ...)
{
	va_list	 ap;
	FILE	*fp;

	assert_non_null(fp = fopen(path, "w"));
	va_start(ap, fmt);
	vfprintf(fp, fmt, ap);
	va_end(ap);
	assert_int_equal(fclose(fp), 0);
}

static void
client_conf(unsigned mtu, unsigned max_flows, const char *idle)
{
	write_conf("tun: {mtu: %u}\nclient:\n"
	    "  server: \"192.0.2.1:443\"\n  key: \"%s\"\n  max_flows: %u\n"
	    "  idle_timeout: %s\n", mtu, KEY, max_flows, idle);
}

static void
adopt(void *arg, const struct conf *n)
{
	assert_ptr_equal(arg, &nadopt);
	nadopt++;
	adopted = n;
}

static void
test_generations(void **state)
{
	const struct conf	*gen1, *gen2;
	struct conf		*c;
	char			 err[256];

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_daemon.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/client.yaml", dir);
	client_conf(1500, 5, "2s");
	if ((c = conf_load_file(path, err, sizeof(err))) == NULL)
		fail_msg("%s", err);
	daemon_init(c, true);
	gen1 = conf_ref(daemon_conf());		/* a flow of generation 1 */
	assert_int_equal(gen1->generation, 1);

	/* A good file: generation 2, adopted; the MTU needs a restart and
	 * stays; generation 1 is untouched for its holder. */
	client_conf(9000, 7, "60s");
	assert_int_equal(daemon_reload(adopt, &nadopt), 0);
	assert_int_equal(nadopt, 1);
	gen2 = daemon_conf();
	assert_ptr_equal(adopted, gen2);
	assert_ptr_not_equal(gen2, gen1);
	assert_int_equal(gen2->generation, 2);
	assert_int_equal(gen2->client.max_flows, 7);
	assert_int_equal(gen2->client.idle_timeout_ms, 60000);
	assert_int_equal(gen2->tun.mtu, 1500);
	assert_int_equal(gen1->generation, 1);
	assert_int_equal(gen1->client.max_flows, 5);
	assert_int_equal(gen1->client.idle_timeout_ms, 2000);

	/* A broken file, then one of the other role: nothing changes, the
	 * role is not asked to adopt anything. */
	write_conf("client:\n  server: [\n");
	assert_int_equal(daemon_reload(adopt, &nadopt), -1);
	write_conf("client:\n  server: \"192.0.2.1:443\"\n  key: \"%s\"\n"
	    "  max_flows: nine\n", KEY);
	assert_int_equal(daemon_reload(adopt, &nadopt), -1);
	write_conf("server:\n  listen: [\"127.0.0.1:8443\"]\n  cert: /x\n"
	    "  cert_key: /y\n  users: [{name: a, key: \"%s\"}]\n", KEY);
	assert_int_equal(daemon_reload(adopt, &nadopt), -1);
	assert_int_equal(nadopt, 1);
	assert_ptr_equal(daemon_conf(), gen2);
	assert_int_equal(daemon_conf()->generation, 2);
	assert_int_equal(daemon_conf()->client.max_flows, 7);

	/* Generation 1 goes with its last holder (ASan would see a use
	 * after free above, or a leak here). */
	conf_unref(gen1);
	daemon_down();		/* lets go of generation 2 */
	assert_null(daemon_conf());
	conf_free(c);		/* the loader's reference to generation 1 */
	unlink(path);
	rmdir(dir);
}

/*
 * `run -d -c ./client.yaml`: the daemon is in "/" when SIGHUP comes, and
 * still reads the file it was started with.
 */
static void
test_reload_relative(void **state)
{
	struct conf	*c;
	char		 err[256], cwd[4096];

	(void)state;
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	snprintf(dir, sizeof(dir), "/tmp/test_daemon.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/client.yaml", dir);
	client_conf(1500, 5, "2s");
	assert_int_equal(chdir(dir), 0);
	if ((c = conf_load_file("./client.yaml", err, sizeof(err))) == NULL)
		fail_msg("%s", err);
	daemon_init(c, true);
	assert_int_equal(chdir("/"), 0);	/* what run -d does */
	client_conf(1500, 9, "2s");
	nadopt = 0;
	assert_int_equal(daemon_reload(adopt, &nadopt), 0);
	assert_int_equal(nadopt, 1);
	assert_int_equal(daemon_conf()->client.max_flows, 9);
	assert_string_equal(daemon_conf()->path, path);
	daemon_down();
	conf_free(c);
	assert_int_equal(chdir(cwd), 0);
	unlink(path);
	rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generations),
		cmocka_unit_test(test_reload_relative),
	};

	umask(077);	/* the files hold a key */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
