/* SPDX-License-Identifier: MIT */
/*
 * The auditlog's framing, writer and decoder (audit/auditfmt.c,
 * audit/auditw.c), run plain and under ASan+UBSan:
 *  - a log cut at random byte offsets, or with random bytes flipped,
 *    decodes exactly the records before the damage and says where it
 *    stopped ("damaged at byte N: <why>; K records decoded"); the expected
 *    N and K come from the offsets the test itself wrote the records at;
 *  - rotation keeps the header first in every file, keeps N files and the
 *    size bound;
 *  - RLIMIT_FSIZE (default SIGXFSZ action: crossing it would kill us): the
 *    writer stops before the limit, the process lives on, the log decodes
 *    cleanly and ends with the "log stopped" note;
 *  - a log that cannot be created fails cleanly; an existing file is
 *    left alone;
 *  - the writer's msgpack encoder (audit/auditmp.h) writes the bytes
 *    msgpack-c's packer writes, at every form's boundaries and at random.
 */
#include "auditfmt.h"
#include "auditfunc.h"
#include "auditmp.h"
#include "auditw.h"
#include "harness.h"

#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NREC 60

static msgpack_sbuffer payload(const char *ev, int64_t tr, uint32_t blob)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 3);
	msgpack_pack_str_with_body(&pk, "ev", 2);
	msgpack_pack_str_with_body(&pk, ev, strlen(ev));
	msgpack_pack_str_with_body(&pk, "tr", 2);
	msgpack_pack_int64(&pk, tr);
	msgpack_pack_str_with_body(&pk, "mc", 2);
	msgpack_pack_bin(&pk, blob);
	char *b = malloc(blob + 1);
	for (uint32_t i = 0; i < blob; i++)
		b[i] = (char)h_rand();
	msgpack_pack_bin_body(&pk, b, blob);
	free(b);
	return sb;
}

static char dir[] = "/tmp/jsf-t_auditdec-XXXXXX";

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc((size_t)n + 1);
	*len = fread(b, 1, (size_t)n, f);
	fclose(f);
	return b;
}

/* Decode buf[0..len) (an exact-size copy, so ASan sees any overread):
 * returns records decoded, *tr_ok = all records' tr as written. */
/* A mapped log DIR/NAME (path in p, 300 bytes) with one 300-byte record
 * (*a) written: its writer, still open. */
static struct alogw *one_record(char *p, const char *name,
				const msgpack_sbuffer *h, msgpack_sbuffer *a)
{
	snprintf(p, 300, "%s/%s", dir, name);
	struct alogw_opts o = {p, 0, 0, 0, 0};
	struct alogw *w;
	CHECK_EQ(alogw_open(&w, &o, h->data, h->size), 0);
	*a = payload("start", 0, 300);
	CHECK_EQ(alogw_write(w, a->data, a->size), 0);
	return w;
}

static int g_nomap; /* the writer's cases: 1 = write(2), not the mapping */
static const char *mode(const char *name)
{
	static char b[200];
	snprintf(b, sizeof(b), "%s%s", name, g_nomap ? " (write(2))" : "");
	return b;
}

static uint64_t decode(const uint8_t *buf, size_t len, int *state, char *msg,
		       size_t msglen, int *tr_ok)
{
	uint8_t *copy = malloc(len ? len : 1);
	memcpy(copy, buf, len);
	struct alog_reader r;
	alog_reader_init(&r, copy, len);
	const msgpack_object *o;
	int ret;
	*tr_ok = 1;
	while ((ret = alog_next(&r, &o)) == 1) {
		int64_t tr;
		if (r.nrec > 1 && (!alog_mp_int(alog_mp_get(o, "tr"), &tr) ||
				   tr != (int64_t)r.nrec - 2))
			*tr_ok = 0;
	}
	*state = ret;
	snprintf(msg, msglen, "%s", r.msg);
	uint64_t n = r.nrec;
	alog_reader_free(&r);
	free(copy);
	return n;
}

int main(void)
{
	h_seed();
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	char path[256];
	snprintf(path, sizeof(path), "%s/log", dir);
	/* a log: header + NREC records, offsets known */
	size_t off[NREC + 2];
	msgpack_sbuffer h = payload("header", -1, 10);
	struct alogw_opts o = {path, 0, 0, 0, 0};
	struct alogw *w;
	int err = alogw_open(&w, &o, h.data, h.size);
	off[0] = ALOG_MAGIC_LEN;
	off[1] = off[0] + ALOG_FRAME + h.size;
	for (int i = 0; i < NREC; i++) {
		msgpack_sbuffer p = payload("stop", i, h_below(3000));
		if (!err)
			err = alogw_write(w, p.data, p.size);
		off[i + 2] = off[i + 1] + ALOG_FRAME + p.size;
		msgpack_sbuffer_destroy(&p);
	}
	alogw_close(w, NULL);
	size_t len = 0;
	uint8_t *log = slurp(path, &len);
	char msg[256], want[256];
	int state, trok;

	CASE("CRC32C: the standard check value, hardware = portable")
	{
		CHECK_EQ(alog_crc32c(0, "123456789", 9), 0xE3069283u);
		CHECK_EQ(alog_crc32c_sw(0, "123456789", 9), 0xE3069283u);
		uint8_t b[300];
		for (int t = 0; t < 2000; t++) {
			size_t n = h_below(sizeof(b)), at = h_below(8);
			for (size_t i = 0; i < sizeof(b); i++)
				b[i] = (uint8_t)h_rand();
			uint32_t seed = (uint32_t)h_rand();
			CHECK_EQ(
			    alog_crc32c(seed, b + at, n - (n > at ? at : n)),
			    alog_crc32c_sw(seed, b + at,
					   n - (n > at ? at : n)));
		}
	}

	CASE("CRC32C: long buffers (the three-block way), hardware = portable")
	{
		static uint8_t b[8192];
		for (size_t i = 0; i < sizeof(b); i++)
			b[i] = (uint8_t)h_rand();
		for (int t = 0; t < 500; t++) {
			size_t at = h_below(8), n = h_below(sizeof(b) - 8);
			uint32_t seed = (uint32_t)h_rand();
			CHECK_EQ(alog_crc32c(seed, b + at, n),
				 alog_crc32c_sw(seed, b + at, n));
		}
		/* each block boundary: 3 * 256 bytes and one either side */
		for (size_t n = 760; n <= 776; n++)
			CHECK_EQ(alog_crc32c(0, b, n), alog_crc32c_sw(0, b, n));
		for (size_t n = 1530; n <= 1545; n++)
			CHECK_EQ(alog_crc32c(7, b + 1, n),
				 alog_crc32c_sw(7, b + 1, n));
	}

	CASE("an intact log decodes every record, cleanly")
	{
		CHECK_EQ(err, 0);
		CHECK_EQ(len, off[NREC + 1]);
		uint64_t n = decode(log, len, &state, msg, sizeof(msg), &trok);
		CHECK_EQ(n, NREC + 1);
		CHECK_EQ(state, 0);
		CHECK(trok, "records as written");
	}

	CASE("cut at 3000 random offsets: decodes up to the cut, says where")
	{
		for (int t = 0; t < 3000 && !h_case_failed; t++) {
			size_t cut =
			    t < 40 ? (size_t)t : h_below((uint32_t)len);
			uint64_t k = 0;
			while (k < NREC + 1 && off[k + 1] <= cut)
				k++;
			uint64_t n =
			    decode(log, cut, &state, msg, sizeof(msg), &trok);
			CHECK_EQ(n, k);
			CHECK(trok, "cut %zu", cut);
			if (cut < ALOG_MAGIC_LEN) {
				CHECK_EQ(state, -1);
				CHECK(!strncmp(msg, "damaged at byte 0: ", 19),
				      "%s", msg);
			} else if (off[k] == cut) {
				CHECK(state == 0,
				      "clean cut at a record boundary %zu: %s",
				      cut, msg);
			} else {
				snprintf(want, sizeof(want),
					 "damaged at byte %zu: ", off[k]);
				CHECK_EQ(state, -1);
				CHECK(!strncmp(msg, want, strlen(want)),
				      "cut %zu: %s", cut, msg);
				snprintf(want, sizeof(want),
					 "; %llu records decoded",
					 (unsigned long long)k);
				CHECK(strstr(msg, want) &&
					  strlen(strstr(msg, want)) ==
					      strlen(want),
				      "cut %zu: %s", cut, msg);
			}
		}
	}

	CASE("one byte flipped at 3000 random places: stops at its record")
	{
		uint8_t *b = malloc(len);
		for (int t = 0; t < 3000 && !h_case_failed; t++) {
			memcpy(b, log, len);
			size_t at = h_below((uint32_t)len);
			b[at] ^= (uint8_t)(1 + h_below(255));
			uint64_t n =
			    decode(b, len, &state, msg, sizeof(msg), &trok);
			CHECK_EQ(state, -1);
			CHECK(trok, "flip at %zu", at);
			if (at < ALOG_MAGIC_LEN) {
				CHECK_EQ(n, 0);
				snprintf(
				    want, sizeof(want),
				    "damaged at byte %d: ", at < 8 ? 0 : 8);
			} else {
				uint64_t k = 0;
				while (off[k + 1] <= at)
					k++;
				CHECK_EQ(n, k);
				snprintf(want, sizeof(want),
					 "damaged at byte %zu: ", off[k]);
			}
			CHECK(!strncmp(msg, want, strlen(want)),
			      "flip at %zu: %s", at, msg);
		}
		free(b);
	}

	CASE(
	    "random multi-byte damage and garbage: never past the first damage")
	{
		uint8_t *b = malloc(len);
		for (int t = 0; t < 2000; t++) {
			memcpy(b, log, len);
			size_t first = len;
			int nf = 1 + (int)h_below(8);
			for (int f = 0; f < nf; f++) {
				size_t at = h_below((uint32_t)len);
				b[at] = (uint8_t)h_rand();
				if (b[at] != log[at] && at < first)
					first = at;
			}
			uint64_t n =
			    decode(b, len, &state, msg, sizeof(msg), &trok);
			CHECK(trok, "damage");
			uint64_t k = 0;
			while (k < NREC + 1 && off[k + 1] <= first)
				k++;
			CHECK(n <= k + (first == len), "decoded %llu > %llu",
			      (unsigned long long)n, (unsigned long long)k);
		}
		for (int t = 0; t < 2000;
		     t++) { /* garbage after a valid start */
			size_t cut = off[1 + h_below(NREC)];
			memcpy(b, log, len);
			for (size_t i = cut; i < len; i++)
				b[i] = (uint8_t)h_rand();
			decode(b, len, &state, msg, sizeof(msg), &trok);
			CHECK(trok, "garbage");
		}
		free(b);
	}

	/* the writer's cases: through the shared mapping, then write(2) */
	for (g_nomap = 0; g_nomap < 2; g_nomap++) {
		CASE(mode("rotation: header first in every file, N files kept, "
			  "bounded"))
		{
			char rp[300];
			snprintf(rp, sizeof(rp), "%s/rot%d", dir, g_nomap);
			struct alogw_opts ro = {rp, 8192, 2, 0, g_nomap};
			struct alogw *rw;
			CHECK_EQ(alogw_open(&rw, &ro, h.data, h.size), 0);
			size_t maxrec = 0;
			for (int i = 0; i < 400; i++) {
				alogw_begin(rw);
				msgpack_sbuffer p =
				    payload("stop", i, h_below(700));
				if (p.size > maxrec)
					maxrec = p.size;
				CHECK_EQ(alogw_write(rw, p.data, p.size), 0);
				msgpack_sbuffer_destroy(&p);
			}
			CHECK(alogw_gen(rw) >= 10, "rotated %u times",
			      alogw_gen(rw));
			alogw_close(rw, "end");
			for (int f = 0; f <= 3; f++) {
				char fp[320];
				if (f)
					snprintf(fp, sizeof(fp), "%s.%d", rp,
						 f);
				else
					snprintf(fp, sizeof(fp), "%s", rp);
				struct stat st;
				if (f == 3) {
					CHECK(stat(fp, &st) < 0,
					      "%s should not exist", fp);
					break;
				}
				CHECK(stat(fp, &st) == 0, "%s missing", fp);
				CHECK((uint64_t)st.st_size <=
					  8192 + ALOG_FRAME + maxrec,
				      "%s: %lld bytes", fp,
				      (long long)st.st_size);
				struct alog_reader r;
				CHECK_EQ(alog_read_file(&r, fp), 0);
				const msgpack_object *ob;
				int ret, first = 1;
				while ((ret = alog_next(&r, &ob)) == 1) {
					uint32_t n;
					const char *ev = alog_mp_str(
					    alog_mp_get(ob, "ev"), &n);
					if (first)
						CHECK(ev && n == 6 &&
							  !memcmp(ev, "header",
								  6),
						      "%s: first record", fp);
					first = 0;
				}
				CHECK(ret == 0, "%s: %s", fp, r.msg);
				CHECK(r.nrec > 3, "%s: %llu records", fp,
				      (unsigned long long)r.nrec);
				alog_reader_free(&r);
			}
		}

		CASE(mode(
		    "deferred records: written with the next record, in order"))
		{
			char dp[300];
			snprintf(dp, sizeof(dp), "%s/defer%d", dir, g_nomap);
			struct alogw_opts dop = {dp, 0, 0, 0, g_nomap};
			struct alogw *dw;
			CHECK_EQ(alogw_open(&dw, &dop, h.data, h.size), 0);
			uint64_t b0 = alogw_bytes(dw);
			msgpack_sbuffer a = payload("start", 0, 100),
					b = payload("func", 1, 100),
					c = payload("stop", 2, 100);
			CHECK_EQ(alogw_defer(dw, a.data, a.size), 0);
			CHECK_EQ(alogw_defer(dw, b.data, b.size), 0);
			/* the live file (zeros after the last record while the
			 * writer has it mapped): only the header so far */
			size_t dl;
			uint8_t *d = slurp(dp, &dl);
			CHECK_EQ(decode(d, dl, &state, msg, sizeof(msg), &trok),
				 1);
			CHECK(state == 0 && !msg[0], "live, clean: %s", msg);
			free(d);
			CHECK_EQ(alogw_bytes(dw), b0);
			CHECK_EQ(alogw_write(dw, c.data, c.size), 0);
			CHECK_EQ(alogw_bytes(dw), b0 + 3 * ALOG_FRAME + a.size +
						      b.size + c.size);
			CHECK_EQ(alogw_records(dw), 4);
			d = slurp(dp, &dl);
			CHECK_EQ(decode(d, dl, &state, msg, sizeof(msg), &trok),
				 4);
			CHECK(trok && state == 0 && !msg[0], "live: %s", msg);
			free(d);
			alogw_close(dw, NULL);
			d = slurp(dp, &dl);
			CHECK_EQ(dl,
				 b0 + 3 * ALOG_FRAME + a.size + b.size +
				     c.size); /* the unwritten tail is gone */
			uint64_t n =
			    decode(d, dl, &state, msg, sizeof(msg), &trok);
			CHECK_EQ(n, 4);
			CHECK(trok && state == 0, "in order (tr 0, 1, 2): %s",
			      msg);
			free(d);
			msgpack_sbuffer_destroy(&a);
			msgpack_sbuffer_destroy(&b);
			msgpack_sbuffer_destroy(&c);
		}

		if (!g_nomap)
			CASE("a record being written when its writer died: "
			     "clean end, noted")
			{
				/* the writer puts each record's frame in last:
				 * a SIGKILL mid-copy leaves zeros where the
				 * frame goes, some payload, then the zeros of
				 * the allocated space */
				char up[300];
				msgpack_sbuffer a;
				struct alogw *uw =
				    one_record(up, "unfinished", &h, &a);
				alogw_close(uw, NULL);
				size_t ul;
				uint8_t *u = slurp(up, &ul);
				uint8_t *big = calloc(1, ul + 4096);
				memcpy(big, u, ul);
				memcpy(big + ul + ALOG_FRAME, a.data,
				       a.size); /* its payload, no frame yet */
				uint64_t n = decode(big, ul + 4096, &state, msg,
						    sizeof(msg), &trok);
				CHECK_EQ(n, 2);
				CHECK(state == 0 &&
					  strstr(msg,
						 "unfinished record at byte"),
				      "%s", msg);
				/* and zeros alone: clean, nothing to say */
				n = decode(big, ul + 4, &state, msg,
					   sizeof(msg), &trok);
				CHECK(n == 2 && state == 0 && !msg[0], "%s",
				      msg);
				/* fewer than a frame's zeros at the end: clean
				 * too */
				n = decode(big, ul + 3, &state, msg,
					   sizeof(msg), &trok);
				CHECK(n == 2 && state == 0, "%s", msg);
				free(big);
				free(u);
				msgpack_sbuffer_destroy(&a);
			}

		if (!g_nomap)
			CASE("the file cut short under the writer: it stops, "
			     "no SIGBUS")
			{
				char cp[300];
				msgpack_sbuffer a;
				struct alogw *cw =
				    one_record(cp, "cut", &h, &a);
				/* `logrotate copytruncate`: someone else
				 * empties it */
				CHECK_EQ(truncate(cp, 0), 0);
				int e = 0;
				for (int i = 0; i < 50 && !e; i++)
					e = alogw_write(cw, a.data, a.size);
				CHECK_EQ(e, -EIO);
				const char *why = alogw_error(cw);
				CHECK(why && strstr(why, "cut short"), "%s",
				      why ? why : "(none)");
				CHECK(alogw_write(cw, a.data, a.size) != 0,
				      "stopped");
				alogw_close(cw, NULL);
				struct stat st;
				CHECK(stat(cp, &st) == 0 && st.st_size == 0,
				      "left alone: %lld bytes",
				      (long long)st.st_size);
				msgpack_sbuffer_destroy(&a);
			}

		CASE(
		    mode("RLIMIT_FSIZE: stops before the limit, lives on, ends "
			 "with the note"))
		{
			char fp[300];
			snprintf(fp, sizeof(fp), "%s/full%d", dir, g_nomap);
			fflush(stdout);
			pid_t pid = fork();
			if (pid == 0) {
				/* SIGXFSZ keeps its default action (death): we
				 * must never write past the limit */
				struct rlimit rl = {50000, 50000};
				setrlimit(RLIMIT_FSIZE, &rl);
				struct alogw_opts fo = {fp, 0, 0, 0, g_nomap};
				struct alogw *fw;
				if (alogw_open(&fw, &fo, h.data, h.size))
					_exit(3);
				int i, e = 0;
				for (i = 0; i < 1000 && !e; i++) {
					msgpack_sbuffer p =
					    payload("stop", i, 1500);
					e = alogw_write(fw, p.data, p.size);
					msgpack_sbuffer_destroy(&p);
				}
				if (!e || !alogw_error(fw))
					_exit(4);
				if (alogw_write(fw, "x", 1) ==
				    0) /* stays stopped */
					_exit(5);
				alogw_close(fw, "never written");
				_exit(0);
			}
			int st = 0;
			waitpid(pid, &st, 0);
			CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			      "child status %#x", st);
			struct alog_reader r;
			CHECK_EQ(alog_read_file(&r, fp), 0);
			const msgpack_object *ob;
			int ret;
			char last[300] = "";
			while ((ret = alog_next(&r, &ob)) == 1) {
				uint32_t n;
				const char *t =
				    alog_mp_str(alog_mp_get(ob, "text"), &n);
				snprintf(last, sizeof(last), "%.*s",
					 t ? (int)n : 0, t ? t : "");
			}
			CHECK(ret == 0, "%s", r.msg);
			CHECK(r.nrec > 20, "%llu records",
			      (unsigned long long)r.nrec);
			CHECK(!strncmp(last,
				       "log stopped: writing: File too large",
				       36),
			      "last note: '%s'", last);
			printf(
			    "# RLIMIT_FSIZE 50000: %llu records then \"%s\"\n",
			    (unsigned long long)r.nrec, last);
			alog_reader_free(&r);
		}
	}

	CASE("a log that cannot be created: a clean error")
	{
		char fp[300];
		snprintf(fp, sizeof(fp), "%s/no/such/dir", dir);
		struct alogw_opts fo = {fp, 0, 0, 1, 0};
		struct alogw *fw = NULL;
		CHECK_EQ(alogw_open(&fw, &fo, h.data, h.size), -ENOENT);
		CHECK(fw == NULL, "no writer");
		/* an existing file without replace: EEXIST, left alone */
		fo.path = path;
		fo.replace = 0;
		CHECK_EQ(alogw_open(&fw, &fo, h.data, h.size), -EEXIST);
		struct stat st;
		CHECK(stat(path, &st) == 0 && (size_t)st.st_size == len,
		      "untouched");
	}

	CASE("the reader refuses what is not a log")
	{
		struct alog_reader r;
		CHECK(alog_read_file(&r, "/nonexistent/x") < 0, "missing");
		alog_reader_free(&r);
		const msgpack_object *ob;
		alog_reader_init(&r, "JSFAUDIT\2\0\0\0\0\0\0\0", 16);
		CHECK_EQ(alog_next(&r, &ob), -1);
		CHECK(strstr(r.msg, "version"), "%s", r.msg);
		alog_reader_free(&r);
		/* a valid frame whose payload is an array, not a map */
		uint8_t b[64];
		alog_magic(b);
		uint8_t p[] = {0x91, 0x01};
		alog_frame(b + 16, p, 2);
		memcpy(b + 24, p, 2);
		alog_reader_init(&r, b, 26);
		CHECK_EQ(alog_next(&r, &ob), -1);
		CHECK(strstr(r.msg, "not a msgpack map"), "%s", r.msg);
		alog_reader_free(&r);
		/* a map claiming 2^32-1 entries in 5 bytes: no allocation */
		uint8_t q[] = {0xdf, 0xff, 0xff, 0xff, 0xff};
		alog_frame(b + 16, q, 5);
		memcpy(b + 24, q, 5);
		alog_reader_init(&r, b, 29);
		CHECK_EQ(alog_next(&r, &ob), -1);
		CHECK(strstr(r.msg, "not one msgpack value"), "%s", r.msg);
		alog_reader_free(&r);
	}

	/* The func records' bytecode dumps (audit/auditfunc.c), on LuaJIT's
	 * own dump: luajit writes string.dump of a function (children,
	 * constants of each kind, upvalues, > 255 lines) and what jit.util
	 * answers for it; the decoder must agree, and every cut and 3000
	 * random byte changes must give an error or a decoding, never a
	 * crash (this test also runs under ASan+UBSan). */
	CASE("bytecode dump decoder: agrees with jit.util on LuaJIT's own "
	     "dump; every cut fails cleanly, flips never crash")
	{
		char dpath[300], apath[300], cmd[2000];
		snprintf(dpath, sizeof(dpath), "%s/dump", dir);
		snprintf(apath, sizeof(apath), "%s/answers", dir);
		snprintf(
		    cmd, sizeof(cmd),
		    "luajit -e '"
		    "local f = loadstring(\"local u1, u2 = 1, 2 return "
		    "function(a, ...) "
		    "local t = {1, x = 2} "
		    "local g = function() return a end "
		    "\" .. string.rep(\"\\n\", 300) .. \" "
		    "return u1, u2, 12LL, 3ULL, 1.5, -7, \\\"s\\\", g, t, ... "
		    "end\", \"@dir/x.lua\")() "
		    "local ju = require(\"jit.util\") "
		    "io.open(\"%s\", \"wb\"):write(string.dump(f)) "
		    "local fi = ju.funcinfo(f) "
		    "local o = io.open(\"%s\", \"w\") "
		    "o:write(fi.bytecodes, \" \", fi.nconsts, \" \", "
		    "fi.gcconsts, \" \", fi.upvalues, \"\\n\") "
		    "for pc = 0, fi.bytecodes do "
		    "local ins = ju.funcbc(f, pc) or 0 "
		    "o:write(pc, \" \", ju.funcinfo(f, pc).currentline or "
		    "-1, \" \", ins < 0 and ins + 2^32 or ins, \"\\n\") "
		    "end o:close()' 2>&1",
		    dpath, apath);
		if (system(cmd) != 0) {
			CHECK(0, "luajit failed: %s", cmd);
			break;
		}
		size_t dl = 0, al = 0;
		uint8_t *d = slurp(dpath, &dl);
		uint8_t *a = slurp(apath, &al);
		CHECK(d && a, "no output");
		if (!d || !a) {
			free(d);
			free(a);
			break;
		}
		struct alog_fproto fp;
		int rc = alog_fproto_decode(&fp, d, dl);
		CHECK_EQ(rc, 0);
		unsigned nbc = 0, nk = 0, ngc = 0, nuv = 0;
		char *ap = calloc(1, al + 1);
		memcpy(ap, a, al);
		CHECK(sscanf(ap, "%u %u %u %u", &nbc, &nk, &ngc, &nuv) == 4,
		      "answers");
		CHECK_EQ(fp.sizebc, nbc);
		CHECK_EQ(fp.nkn, nk);
		CHECK_EQ(fp.nkgc, ngc);
		CHECK_EQ(fp.numuv, nuv);
		CHECK(fp.numuv == 2 &&
			  !strcmp(alog_fproto_uvname(&fp, 0), "u1") &&
			  !strcmp(alog_fproto_uvname(&fp, 1), "u2"),
		      "upvalue names");
		unsigned lines = 0;
		for (char *l = strchr(ap, '\n'); l && l[1];
		     l = strchr(l + 1, '\n')) {
			unsigned pc;
			long line;
			unsigned long ins;
			if (sscanf(l + 1, "%u %ld %lu", &pc, &line, &ins) != 3)
				continue;
			if (pc < nbc) /* currentline exists below bytecodes */
				CHECK(alog_fproto_line(&fp, pc) == line,
				      "line of pc %u: %lld vs %ld", pc,
				      (long long)alog_fproto_line(&fp, pc),
				      line);
			if (pc > 0 && pc < nbc)
				CHECK(alog_fproto_ins(&fp, pc) == ins,
				      "ins at pc %u", pc);
			lines++;
		}
		CHECK_EQ(lines, nbc + 1);
		CHECK(nbc > 10 && alog_fproto_line(&fp, nbc - 1) > 300,
		      "a function of more than 255 lines");
		alog_fproto_free(&fp);
		for (size_t cut = 0; cut < dl; cut++) {
			uint8_t *c = malloc(cut ? cut : 1);
			memcpy(c, d, cut);
			rc = alog_fproto_decode(&fp, c, cut);
			CHECK(rc == -1 && fp.err[0], "cut at %zu", cut);
			alog_fproto_free(&fp);
			free(c);
		}
		unsigned bad = 0;
		for (int i = 0; i < 3000; i++) {
			uint8_t *c = malloc(dl);
			memcpy(c, d, dl);
			c[h_rand() % dl] ^= (uint8_t)(1 + h_rand() % 255);
			if (alog_fproto_decode(&fp, c, dl)) {
				CHECK(fp.err[0], "no message");
				bad++;
			} else {
				for (uint32_t pc = 0; pc <= fp.sizebc; pc++)
					(void)alog_fproto_line(&fp, pc);
			}
			alog_fproto_free(&fp);
			free(c);
		}
		printf("# dump %zu bytes; %u of 3000 changed dumps refused\n",
		       dl, bad);
		free(d);
		free(a);
		free(ap);
	}

	CASE("auditmp.h encodes as msgpack-c packs, boundaries and random")
	{
		static const int64_t edge[] = {0,
					       1,
					       31,
					       32,
					       127,
					       128,
					       255,
					       256,
					       65535,
					       65536,
					       4294967295ll,
					       4294967296ll,
					       INT64_MAX,
					       -1,
					       -31,
					       -32,
					       -33,
					       -127,
					       -128,
					       -129,
					       -32767,
					       -32768,
					       -32769,
					       -2147483647ll,
					       -2147483648ll,
					       -2147483649ll,
					       INT64_MIN};
		msgpack_sbuffer a, b;
		msgpack_sbuffer_init(&a);
		msgpack_sbuffer_init(&b);
		msgpack_packer pk;
		msgpack_packer_init(&pk, &a, msgpack_sbuffer_write);
		char body[70000];
		for (size_t i = 0; i < sizeof(body); i++)
			body[i] = (char)h_rand();
		size_t ne = sizeof(edge) / sizeof(edge[0]);
		for (size_t t = 0; t < ne + 20000; t++) {
			int64_t v = t < ne ? edge[t] : (int64_t)h_rand();
			if (t >= ne && t % 3) /* small ones too */
				v >>= h_below(64);
			/* lengths: |v| where it is one, else random */
			uint64_t av = v < 0 ? ~(uint64_t)v : (uint64_t)v;
			size_t n = av < 70000 ? (size_t)av : h_below(70000);
			msgpack_pack_int64(&pk, v);
			alog_mpw_int(&b, v);
			msgpack_pack_uint64(&pk, (uint64_t)v);
			alog_mpw_uint(&b, (uint64_t)v);
			msgpack_pack_map(&pk, n);
			alog_mpw_map(&b, n);
			msgpack_pack_array(&pk, n);
			alog_mpw_array(&b, n);
			double d;
			memcpy(&d, &v, 8);
			msgpack_pack_double(&pk, d);
			alog_mpw_double(&b, d);
			size_t sl = t % 7 ? n % 300 : n;
			msgpack_pack_str_with_body(&pk, body, sl);
			alog_mpw_str(&b, body, sl);
			msgpack_pack_bin(&pk, sl);
			msgpack_pack_bin_body(&pk, body, sl);
			alog_mpw_binhead(&b, sl);
			alog_mpw_bytes(&b, body, sl);
			msgpack_pack_nil(&pk);
			alog_mpw_nil(&b);
			msgpack_pack_true(&pk);
			alog_mpw_bool(&b, 1);
			msgpack_pack_false(&pk);
			alog_mpw_bool(&b, 0);
			if (a.size != b.size ||
			    memcmp(a.data, b.data, a.size)) {
				CHECK(0, "value %lld, length %zu: differs",
				      (long long)v, n);
				break;
			}
			msgpack_sbuffer_clear(&a);
			msgpack_sbuffer_clear(&b);
		}
		msgpack_sbuffer_destroy(&a);
		msgpack_sbuffer_destroy(&b);
	}

	msgpack_sbuffer_destroy(&h);
	free(log);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd)) {
	}
	return h_exit();
}
