/*
 * The files a configuration names, opened and verified the way the roles
 * will use them.  See check.h.
 *
 * Only what the loader cannot see is checked here: whether the PEM files
 * open and parse, whether the key belongs to the certificate, and how long
 * the certificates are good for.  An expired certificate is a warning, not
 * an error: a client that pins the server's key (pin_sha256) does not look
 * at the dates.
 */
#include "config.h"

#include "daemon/check.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "conf/conf.h"
#include "core/log.h"

struct check {
	const char	*who;	/* "tunsplit check" */
	bool		 quiet;
	int		 rc;
};

/* prio: syslog's, for the journal when it reads our stderr (under a
 * unit's ExecStartPre= or ExecStart=). */
static void __attribute__((format(printf, 5, 6)))
check_say(struct check *ck, int prio, const char *what, const char *path,
    const char *fmt, ...)
{
	va_list	ap;

	if (log_stderr_is_journal())
		fprintf(stderr, "<%d>", prio);
	fprintf(stderr, "%s: %s %s: ", ck->who, what, path);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

#define CHECK_ERR(ck, what, path, ...) do {				\
	check_say((ck), LOG_ERR, (what), (path), __VA_ARGS__);		\
	(ck)->rc = -1;							\
} while (0)
#define CHECK_OK(ck, what, path, ...) do {				\
	if (!(ck)->quiet)						\
		check_say((ck), LOG_INFO, (what), (path), __VA_ARGS__);	\
} while (0)

static FILE *
check_open(struct check *ck, const char *what, const char *path)
{
	FILE	*fp;

	if ((fp = fopen(path, "re")) == NULL)
		CHECK_ERR(ck, what, path, "%s", strerror(errno));
	return fp;
}

/* "2027-01-31", or "?" */
static const char *
check_date(const ASN1_TIME *t, char *buf, size_t len)
{
	struct tm	tm;

	if (ASN1_TIME_to_tm(t, &tm) != 1 ||
	    strftime(buf, len, "%Y-%m-%d", &tm) == 0)
		snprintf(buf, len, "?");
	return buf;
}

/*
 * Days from now until t (negative: past).  Certificates are warned about
 * CHECK_WARN_DAYS ahead, as certbot renews at 30 days.
 */
#define CHECK_WARN_DAYS	30

static int
check_days(const ASN1_TIME *t)
{
	int	days = 0, secs = 0;

	if (ASN1_TIME_diff(&days, &secs, NULL, t) != 1)
		return 0;
	return days;
}

/* Warnings about x's dates; false when x has expired. */
static bool
check_dates(struct check *ck, const char *what, const char *path, X509 *x)
{
	char	date[32];
	int	days;

	if (check_days(X509_get0_notBefore(x)) > 0)
		check_say(ck, LOG_WARNING, what, path,
		    "warning: not valid before %s",
		    check_date(X509_get0_notBefore(x), date, sizeof(date)));
	days = check_days(X509_get0_notAfter(x));
	check_date(X509_get0_notAfter(x), date, sizeof(date));
	if (X509_cmp_current_time(X509_get0_notAfter(x)) < 0) {
		check_say(ck, LOG_WARNING, what, path,
		    "warning: expired on %s; clients that verify it (all "
		    "but pin_sha256 ones) refuse it", date);
		return false;
	}
	if (days < CHECK_WARN_DAYS)
		check_say(ck, LOG_WARNING, what, path,
		    "warning: expires on %s, in %d day%s", date, days,
		    days == 1 ? "" : "s");
	return true;
}

/* The server's certificate chain: its leaf (returned) and the count. */
static X509 *
check_cert(struct check *ck, const char *path)
{
	X509	*leaf, *x;
	FILE	*fp;
	char	 subject[256], date[32];
	int	 n = 1;

	if ((fp = check_open(ck, "cert", path)) == NULL)
		return NULL;
	if ((leaf = PEM_read_X509(fp, NULL, NULL, NULL)) == NULL) {
		CHECK_ERR(ck, "cert", path, "no PEM certificate in it");
		fclose(fp);
		return NULL;
	}
	while ((x = PEM_read_X509(fp, NULL, NULL, NULL)) != NULL) {
		X509_free(x);
		n++;
	}
	fclose(fp);
	ERR_clear_error();	/* the end of the file */
	X509_NAME_oneline(X509_get_subject_name(leaf), subject,
	    sizeof(subject));
	if (check_dates(ck, "cert", path, leaf))
		CHECK_OK(ck, "cert", path, "ok, %s, %d certificate%s, valid "
		    "until %s", subject, n, n == 1 ? "" : "s",
		    check_date(X509_get0_notAfter(leaf), date, sizeof(date)));
	return leaf;
}

/* A passphrase cannot be asked for: a daemon has no one to ask. */
static int
check_no_passphrase(char *buf, int size, int rwflag, void *arg)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)arg;
	return -1;
}

static void
check_key(struct check *ck, const char *path, X509 *leaf,
    const char *cert_path)
{
	EVP_PKEY	*key;
	FILE		*fp;

	if ((fp = check_open(ck, "cert_key", path)) == NULL)
		return;
	key = PEM_read_PrivateKey(fp, NULL, check_no_passphrase, NULL);
	fclose(fp);
	ERR_clear_error();
	if (key == NULL) {
		CHECK_ERR(ck, "cert_key", path, "no PEM private key in it (or "
		    "one with a passphrase, which tunsplit cannot use)");
		return;
	}
	if (leaf != NULL && X509_check_private_key(leaf, key) != 1)
		CHECK_ERR(ck, "cert_key", path, "does not match the "
		    "certificate in %s", cert_path);
	else if (leaf != NULL)
		CHECK_OK(ck, "cert_key", path, "ok, matches the certificate");
	ERR_clear_error();
	EVP_PKEY_free(key);
}

static void
check_ca(struct check *ck, const char *path)
{
	X509	*x;
	FILE	*fp;
	int	 n = 0, expired = 0;

	if ((fp = check_open(ck, "ca", path)) == NULL)
		return;
	while ((x = PEM_read_X509(fp, NULL, NULL, NULL)) != NULL) {
		if (X509_cmp_current_time(X509_get0_notAfter(x)) < 0)
			expired++;
		X509_free(x);
		n++;
	}
	fclose(fp);
	ERR_clear_error();
	if (n == 0) {
		CHECK_ERR(ck, "ca", path, "no PEM certificate in it");
		return;
	}
	if (expired > 0)
		check_say(ck, LOG_WARNING, "ca", path, "warning: %d of its %d "
		    "certificate%s expired", expired, n, n == 1 ? " has" :
		    "s have");
	else
		CHECK_OK(ck, "ca", path, "ok, %d certificate%s", n,
		    n == 1 ? "" : "s");
}

int
check_files(const struct conf *c, const char *who, bool quiet)
{
	struct check	 ck = { who, quiet, 0 };
	X509		*leaf;
	size_t		 i;

	if (c->role == CONF_ROLE_SERVER) {
		leaf = check_cert(&ck, c->server.cert_file);
		check_key(&ck, c->server.cert_key_file, leaf,
		    c->server.cert_file);
		X509_free(leaf);
	} else
		for (i = 0; i < c->client.noutbounds; i++)
			if (c->client.outbounds[i].ca_file != NULL)
				check_ca(&ck, c->client.outbounds[i].ca_file);
	return ck.rc;
}
